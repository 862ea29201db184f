#!/usr/bin/env python3
"""List or fill the fields of a PDF form (a fixture for skillhost's tests; not run by the host)."""
import json
import sys

from pypdf import PdfReader, PdfWriter


def main(argv):
    if argv[:1] == ["--list"]:
        for name, field in (PdfReader(argv[1]).get_fields() or {}).items():
            print(name, field.get("/FT"), field.get("/V"))
        return
    form, values_path, out_path = argv
    reader = PdfReader(form)
    writer = PdfWriter()
    writer.append(reader)
    with open(values_path, encoding="utf-8") as f:
        values = json.load(f)
    for page in writer.pages:
        writer.update_page_form_field_values(page, values)
    with open(out_path, "wb") as f:
        writer.write(f)


if __name__ == "__main__":
    main(sys.argv[1:])
