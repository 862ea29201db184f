// Command policyassist is an example skill that orchestrates other hosted
// tools instead of re-implementing them: asked how much lodging an employee
// may claim for a trip, it looks the rule up with the policy skill
// (policy.search_policies), reads the cap for the city's tier and the
// uplift for the employee's grade from the clause, has the calc skill
// (calc.evaluate) do the sum, and answers with the figure and the clause's
// citation. Its manifest's "uses" lists exactly those two tools; the host
// refuses any other call it might make, and runs these two under the scope
// of whoever called policyassist.
package main
