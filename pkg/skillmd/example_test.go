package skillmd_test

import (
	"fmt"

	"github.com/skillhost/skillhost/pkg/skillmd"
)

// Parse reports every problem at once, with its line and field. Warnings are problems the
// skill is served with anyway, as the specification asks clients to be lenient.
func ExampleParse() {
	_, problems := skillmd.Parse([]byte(`---
name: PDF
license: [MIT]
compatibility: Needs python3
allowed_tools: Read
---
Extract the text.
`))
	for _, p := range problems {
		fmt.Println(p)
	}
	fmt.Println("serve it:", problems.Err() == nil)
	// Output:
	// SKILL.md:2: front matter: name: warning: "PDF" must be lowercase a-z, 0-9 and hyphens; the skill is served under its folder name
	// SKILL.md:3: front matter: license: warning: must be a string, not a list; ignored
	// SKILL.md:5: front matter: allowed_tools: warning: is not a field of the Agent Skills specification; it is kept but not used; did you mean "allowed-tools"?
	// SKILL.md:2: front matter: description: is required but missing
	// serve it: false
}

// Scan finds the skills of a tree, Load judges each folder, and a skill's files are read
// through it: only files it listed, never outside its folder.
func ExampleScan() {
	skills, err := skillmd.Scan("testdata/skills")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range skills {
		fmt.Printf("%s %s (%s, version from %s, %d files)\n", s.Name, s.Status, s.Doc.License, s.VersionFrom, len(s.Files))
	}
	pdf := skills[2]
	fmt.Println(pdf.Name, "is version", pdf.Version)
	forms, _ := pdf.ReadFile("references/forms.md")
	fmt.Printf("references/forms.md starts %q\n", forms[:12])
	_, err = pdf.ReadFile("../brand-guidelines/SKILL.md")
	fmt.Println(err)
	// Output:
	// brand-guidelines valid (, version from digest, 4 files)
	// changelog-writer valid (, version from digest, 3 files)
	// pdf-processing valid (Apache-2.0. See LICENSE.txt., version from metadata, 6 files)
	// pdf-processing is version 1.2.0
	// references/forms.md starts "# Form field"
	// skill pdf-processing: open "../brand-guidelines/SKILL.md": not a plain relative path inside the skill folder
}

// NamedTools says which of the registry's tools the instructions name, so that activating the
// skill can bring them into the run: qualified names anywhere, the skill's own tools by their
// short name in code spans or allowed-tools.
func ExampleDocument_NamedTools() {
	doc, _ := skillmd.Parse([]byte(`---
name: invoices
description: Check an invoice's totals. Use when the user sends an invoice.
allowed-tools: invoices.extract
---
Extract the lines, then add them up with calc.evaluate and compare with ` + "`total`" + `.
`))
	served := []string{"calc.convert_units", "calc.evaluate", "invoices.extract", "invoices.total", "search.web"}
	fmt.Println(doc.NamedTools("invoices", served))
	// Output:
	// [calc.evaluate invoices.extract invoices.total]
}
