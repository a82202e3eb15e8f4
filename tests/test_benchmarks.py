"""The benchmark's workloads are right: adjoint's gradient of each equals its hand-written
gradient (the bound every system is timed against), and the function whose first
differentiation is timed is differentiated correctly. No timings here: they live in
`benchmarks/`."""

import pathlib

import numpy as np
import pytest

from adjoint.testing import check_grad

from support import load_module

BENCHMARKS = pathlib.Path(__file__).parent.parent / "benchmarks"
workloads = load_module(BENCHMARKS / "workloads.py", "benchmark_workloads")
transform_subject = load_module(BENCHMARKS / "transform_subject.py", "benchmark_transform_subject")


@pytest.fixture(scope="module")
def suite():
    return workloads.build()


@pytest.mark.parametrize("name", workloads.NAMES)
def test_adjoint_agrees_with_the_hand_written_gradient(suite, name):
    workload = suite[name]
    expected = workload.hand(*workload.args)
    got = workload.adjoint(*workload.args)
    assert len(got) == len(expected) == len(workload.wrt)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-9)


def test_every_workload_is_built_once_under_its_name(suite):
    assert tuple(suite) == workloads.NAMES


def test_the_transform_subject_is_differentiated_correctly():
    check_grad(transform_subject.gru_attention_loss, *transform_subject.inputs())
