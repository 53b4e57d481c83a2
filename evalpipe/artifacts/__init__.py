"""The run directory's files: what they are called (``rundir``), how they are read and written (``io``),
the versioned models they hold (``schema``) and how secrets are kept out of them (``redact``)."""
