"""DRA objects (resource.k8s.io/v1) as the API and NVIDIA's DRA driver spell them, for tests."""

from __future__ import annotations

GPU = "gpu.nvidia.com"


def resource_slice(uid: str, node: str, driver: str, devices: list[dict]) -> dict:
    return {
        "metadata": {"name": f"{node}-{driver}-x", "uid": uid, "resourceVersion": "5"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def gpu(name: str, uuid: str, memory: str = "81559Mi") -> dict:
    return {
        "name": name,
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": uuid},
            "index": {"int": 0},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def mig(name: str, parent: str, profile: str) -> dict:
    return {
        "name": name,
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": f"MIG-{name}"},
            "parentUUID": {"string": parent},
            "profile": {"string": profile},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
        },
        "capacity": {"memory": {"value": "9856Mi"}},
    }


def channel(name: str) -> dict:
    return {"name": name, "attributes": {"type": {"string": "channel"}, "id": {"int": 0}}}


def claim(uid: str, results: list[tuple[str, str, str, str]], pods: list[str]) -> dict:
    body: dict = {"metadata": {"name": f"claim-{uid}", "namespace": "team-a", "uid": uid}}
    if results:
        body["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": r, "driver": d, "pool": p, "device": v}
                        for r, d, p, v in results
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": f"p-{u}", "uid": u} for u in pods],
        }
    return body
