"""pytest plugin used by the compat runner: writes each test's outcome to the
file named by ``CHAINER_COMPAT_OUTCOMES``, one JSON ``[nodeid, outcome]`` per
line.

It also seeds NumPy and ``random`` before collection, so that suites which
draw random parameterizations at import collect the same tests in every run.
"""
import json
import os
import random

_outcomes = {}


def pytest_configure(config):
    import numpy

    numpy.random.seed(0)
    random.seed(0)


def pytest_collectreport(report):
    if report.failed:
        _outcomes[report.nodeid + '::<collection>'] = 'failed'


def pytest_runtest_logreport(report):
    # A test fails if any of its phases fails; a skip in setup is a skip.
    if _outcomes.get(report.nodeid) == 'failed':
        return
    if report.failed:
        _outcomes[report.nodeid] = 'failed'
    elif report.skipped:
        _outcomes[report.nodeid] = 'skipped'
    elif report.when == 'call':
        _outcomes[report.nodeid] = 'passed'


def pytest_unconfigure(config):
    path = os.environ.get('CHAINER_COMPAT_OUTCOMES')
    if path:
        with open(path, 'w') as f:
            for nodeid, outcome in _outcomes.items():
                f.write(json.dumps([nodeid, outcome]) + '\n')
