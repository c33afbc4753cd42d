"""The plain-client anchor: paged lists of every node and pod into the client's model objects.

    python -m bench.plain_client KUBECONFIG PAGE_SIZE

This is how most Python tools use the official client (``list_pod_for_all_namespaces`` with
``limit``/``_continue``), building ``V1Node``/``V1Pod`` objects for every item.
"""

from __future__ import annotations

import sys

from kubernetes import client, config


def main() -> int:
    kubeconfig, page_size = sys.argv[1], int(sys.argv[2])
    api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    counts = {}
    for name, lister in (("nodes", api.list_node), ("pods", api.list_pod_for_all_namespaces)):
        token = None
        count = 0
        while True:
            page = lister(limit=page_size, _continue=token) if token else lister(limit=page_size)
            count += len(page.items)
            token = page.metadata._continue
            if not token:
                break
        counts[name] = count
    print(counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
