"""Rules for `scipy.special`, registered the first time a scipy function is looked up (see
`registry._OPTIONAL_RULES`): `import adjoint` never imports scipy."""
