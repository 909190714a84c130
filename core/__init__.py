"""The ground every other package stands on: errors, the Batch, distributions, the vector
environment interface, rollout collection and results I/O.

Imports point one way (docs/DESIGN.md, "Layout"): ``core`` imports no other pg-arena package;
``algos`` and ``suites`` import ``core`` (and never each other); ``analysis`` reads stored
results through ``core``; ``harness`` (planning, training, executors, the CLI) is on top.
"""
