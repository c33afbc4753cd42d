"""The floor: fetch every node and pod page over HTTP and only find the continue token.

    python -m bench.raw_fetch KUBECONFIG PAGE_SIZE

Uses the kubernetes client's transport (asking for gzip, as kubectl and annex do) with
``_preload_content=False`` and msgspec to read
just ``metadata.continue`` (skipping the items without building anything), so its time is what
the server and loopback cost, not what decoding costs.
"""

from __future__ import annotations

import sys

import msgspec
from kubernetes import client, config


class _Metadata(msgspec.Struct):
    continue_: str = msgspec.field(default="", name="continue")


class _Page(msgspec.Struct):
    metadata: _Metadata


def main() -> int:
    kubeconfig, page_size = sys.argv[1], int(sys.argv[2])
    api_client = config.new_client_from_config(config_file=kubeconfig)
    # Ask for gzip as kubectl and annex do, so the floor includes inflating the pages.
    api_client.set_default_header("Accept-Encoding", "gzip")
    api = client.CoreV1Api(api_client)
    decoder = msgspec.json.Decoder(_Page)
    total_bytes = 0
    for lister in (api.list_node, api.list_pod_for_all_namespaces):
        token = None
        while True:
            kwargs = {"limit": page_size, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            body = lister(**kwargs).data
            total_bytes += len(body)
            token = decoder.decode(body).metadata.continue_
            if not token:
                break
    print(f"{total_bytes / 2**20:.0f} MiB fetched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
