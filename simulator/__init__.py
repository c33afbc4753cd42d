"""A stand-in GPU cluster for annex's demo, tests and benchmarks.

`simulator.world` builds a seeded, deterministic cluster state; `simulator.kubernetes` serves
it over HTTP as a Kubernetes API server faithful enough for the real `kubernetes` client and
`kubectl`. The simulator never imports annex code: it is the world annex observes.
"""
