"""User modules for the export tests: what `adjoint.export` is given, imported as a user would."""
