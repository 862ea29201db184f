#!/usr/bin/env python3
"""Print the text or the tables of a PDF (a fixture for skillhost's tests; not run by the host)."""
import csv
import sys

import pdfplumber


def main(argv):
    text_only = "--text" in argv
    paths = [a for a in argv if not a.startswith("--")]
    if len(paths) != 1:
        sys.exit("usage: extract_tables.py [--text] FILE.pdf")
    out = csv.writer(sys.stdout)
    with pdfplumber.open(paths[0]) as pdf:
        for number, page in enumerate(pdf.pages, start=1):
            if text_only:
                print(f"=== page {number} ===")
                print(page.extract_text() or "")
                continue
            for index, table in enumerate(page.extract_tables(), start=1):
                print(f"# page {number}, table {index}")
                out.writerows(table)


if __name__ == "__main__":
    main(sys.argv[1:])
