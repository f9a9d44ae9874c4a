"""Writes a one-page PDF with two columns of text whose content stream interleaves them
(right column line, then left column line, ...), so that reading order, content-stream order
and physical layout all differ: the test of pdf.text's modes (tests/e2e/pdf_text.sh).

  two_column_pdf.py OUT.pdf
"""
import sys

LINES = 6


def content():
    ops = ["BT /F1 12 Tf 14 TL"]
    for i in range(LINES):
        y = 720 - 18 * i
        # The right column's line first: the stream order is not the reading order.
        ops.append(f"1 0 0 1 320 {y} Tm (Right column line {i + 1}) Tj")
        ops.append(f"1 0 0 1 72 {y} Tm (Left column line {i + 1}) Tj")
    ops.append("ET")
    return "\n".join(ops).encode()


def main():
    stream = content()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    with open(sys.argv[1], "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
