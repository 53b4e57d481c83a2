"""One module per report section; each turns the ``Summary`` into that section's blocks.

``evalpipe.report.document.build_document`` lists them in reading order.
"""
