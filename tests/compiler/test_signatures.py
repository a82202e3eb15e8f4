"""compiler.signatures: a builtin's parameters read from its text signature are what
`inspect.signature` reads."""

import inspect

import numpy as np
import pytest

from adjoint.compiler import signatures


def by_inspect(callee):
    parameters = inspect.signature(callee).parameters.values()
    return [
        (p.name, p.default if p.default is not inspect.Parameter.empty and signatures._is_simple(p.default)
         else signatures.NO_DEFAULT)
        for p in parameters
    ]


@pytest.mark.parametrize("callee", [np.concatenate, np.dot, np.where, np.empty_like, np.zeros, np.sum, np.clip, np.tensordot])
def test_read_as_inspect_reads_it(callee):
    assert list(signatures.keyword_defaults(callee)) == by_inspect(callee)


def test_a_text_signature_that_is_not_plain_python_is_left_to_inspect():
    assert signatures._text_signature_defaults(np.ndarray.sum) is None  # (`$self`)
