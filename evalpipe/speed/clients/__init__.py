"""One module per benchmark client: its argv for one round and a parser for the files it writes."""
