package pdfium

// checkPDF is a one-page PDF with one line of text, rendered and read by Check.
var checkPDF = []byte(`%PDF-1.4
1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj
2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj
3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 100]/Resources<</Font<</F1 4 0 R>>>>/Contents 5 0 R>>endobj
4 0 obj<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>endobj
5 0 obj<</Length 37>>stream
BT /F1 18 Tf 20 40 Td (filemill) Tj ET
endstream endobj
trailer<</Root 1 0 R>>
%%EOF
`)
