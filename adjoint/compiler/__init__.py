"""The source-to-source compiler: an ordered list of small passes (see `pipeline`)."""
