"""The CLI's command group: the GPU benchmark probes annex deploys (``annex probe
manifest``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from annex.cli.arguments import positive_int
from annex.settings import Settings


def register(commands: Any) -> None:
    probe = commands.add_parser("probe", help="the GPU benchmark probes annex deploys")
    probe_actions = probe.add_subparsers(dest="action", metavar="ACTION", required=True)
    manifest = probe_actions.add_parser(
        "manifest",
        help="write the Kubernetes manifest that runs the probe suite on every GPU node",
        description=(
            "Print a Namespace, PriorityClass, ServiceAccount and an indexed Job that runs the "
            "Triton benchmark suite once on each of NODES GPU nodes; apply it with kubectl."
        ),
    )
    manifest.add_argument(
        "--nodes", type=positive_int, required=True, metavar="N", help="GPU nodes to probe"
    )
    manifest.add_argument(
        "--gpus-per-node",
        type=positive_int,
        default=8,
        metavar="N",
        help="GPUs each probe pod requests: all of a node's GPUs (default: 8)",
    )
    manifest.add_argument(
        "--image", required=True, metavar="IMAGE", help="container image with annex[gpu]"
    )
    manifest.add_argument(
        "--namespace",
        default=None,
        help="namespace of the probe Job (default: the [gpubench] namespace setting)",
    )
    manifest.add_argument(
        "--deadline-seconds",
        type=positive_int,
        default=3600,
        metavar="SECONDS",
        help="the Job's activeDeadlineSeconds: Kubernetes stops probes still running after "
        "it (default: 3600)",
    )
    manifest.add_argument(
        "--output", "-o", type=Path, metavar="PATH", help="file to write (default: stdout)"
    )
    manifest.set_defaults(run=cmd_probe_manifest)


def cmd_probe_manifest(args: argparse.Namespace, settings: Settings) -> int:
    from probes.gpubench.manifest import manifest_yaml, probe_manifest

    objects = probe_manifest(
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        image=args.image,
        namespace=args.namespace or settings.gpubench.namespace,
        deadline_seconds=args.deadline_seconds,
    )
    text = manifest_yaml(objects)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}; apply with: kubectl apply -f {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
