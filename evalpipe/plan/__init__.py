"""`evalpipe plan`: designs and their operating characteristics (the statistics are `evalpipe.stats`)."""
