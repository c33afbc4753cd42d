"""Which nodes attest, with which services, which of them fail and how, and when they rebooted.

`attestation_plan(world)` reads the world's Node objects: a node whose labels carry
`nvidia.com/cc.capable=true` is a confidential VM with its GPUs in CC mode, and NFD's
`feature.node.kubernetes.io/cpu-security.{tdx,sev.snp}.enabled` says its CPU TEE. Per node it
decides, deterministically from the world's seed (an RNG of its own, so the plan never moves
the world's other objects):

- the CVM token: SEV-SNP -> Azure Attestation `sevsnpvm`; TDX -> Intel Trust Authority, or
  Azure Attestation `tdxvm` for every third TDX node (by name order);
- NVIDIA claims version: "2.0" (an older SDK) on about one node in five, else "3.0";
- boots: the current one (`status.nodeInfo.bootID`) started 2 h-20 d before `world.now`,
  earlier ones lasted 1-25 d each, back to `HISTORY_HORIZON_DAYS`; boot ids of past boots
  are seeded UUIDs;
- faults, in `PLAN_FAULTS` order, one node each (one per 200 CC nodes in big worlds), never
  more than half the CC nodes: `debug_enabled` (GPU-0 dbgstat enabled, since a moment
  6-30 h before `world.now`: a failure mid-run), `measurement_mismatch` (GPU measres failure,
  likewise mid-run), `self_reported` (only NVIDIA's local verifier for the GPUs),
  `expired` (the agent submits tokens minted two hours earlier), `revoked_certificate` (the
  GPU tokens are signed by a key whose intermediate is revoked), `wrong_gpu` (GPU-0's token
  carries the ueid of GPU-0 of a passing node), `cvm_debug_enabled` (the CPU TEE is
  debuggable), `missing` (capable, but no evidence ever arrives).

MAA reports the VM id as Azure does: the node's SMBIOS `systemUUID` with the first three
fields byte-swapped, in upper case (`tokens.azure_vm_id`).
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from simulator.attestation.tokens import azure_vm_id, gpu_ueid
from simulator.world.catalog import CC_CAPABLE_LABEL, CPU_TEE_LABELS
from simulator.world.model import World

HISTORY_HORIZON_DAYS = 90
PLAN_FAULTS = (
    "debug_enabled",
    "measurement_mismatch",
    "self_reported",
    "expired",
    "revoked_certificate",
    "wrong_gpu",
    "cvm_debug_enabled",
    "missing",
)
MID_RUN_FAULTS = frozenset({"debug_enabled", "measurement_mismatch", "cvm_debug_enabled"})
NODES_PER_FAULT = 200


@dataclass(frozen=True)
class NodeAttestation:
    """One confidential node's attestation behaviour."""

    node_name: str
    tee: str  # "tdx" | "sevsnp"
    cvm_provider: str  # "azure-maa" | "intel-ita"
    maa_tee: str | None  # "sevsnpvm" | "tdxvm" for azure-maa, None for intel-ita
    vm_id: str  # what MAA reports as x-ms-azurevm-vmid
    system_uuid: str
    gpus: tuple[tuple[str, str], ...]  # (gpu_uuid, ueid), by index
    claims_version: str  # NVIDIA claims "3.0" | "2.0"
    fault: str | None  # one of PLAN_FAULTS
    fault_since: datetime | None  # before this instant the node is clean; None: always
    foreign_ueid: str | None  # wrong_gpu: the ueid GPU-0's token carries instead
    boots: tuple[tuple[datetime, str], ...]  # (started, boot_id), oldest first

    @property
    def boot_id(self) -> str:
        """The current boot (the Node object's status.nodeInfo.bootID)."""
        return self.boots[-1][1]

    def boot_at(self, moment: datetime) -> tuple[datetime, str] | None:
        """The boot running at `moment`, or None before the first known boot."""
        starts = [started for started, _ in self.boots]
        index = bisect.bisect_right(starts, moment) - 1
        return self.boots[index] if index >= 0 else None

    def fault_at(self, moment: datetime) -> str | None:
        """The plan fault in force at `moment`."""
        if self.fault is None or (self.fault_since is not None and moment < self.fault_since):
            return None
        return self.fault


def attestation_plan(world: World) -> dict[str, NodeAttestation]:
    """The plan for every confidential-capable node of `world`, by node name (sorted)."""
    rng = random.Random(f"annex-attestation:{world.seed}")
    gpus_by_node: dict[str, list] = {}
    for gpu in world.gpus:
        gpus_by_node.setdefault(gpu.node, []).append(gpu)
    capable = []
    for node in sorted(world.nodes, key=lambda n: n["metadata"]["name"]):
        labels = node["metadata"].get("labels", {})
        if labels.get(CC_CAPABLE_LABEL) != "true":
            continue
        tee = next((t for t, label in CPU_TEE_LABELS.items() if labels.get(label) == "true"), None)
        if tee is None:
            continue
        capable.append((node, tee))

    faults: dict[str, str] = {}
    per_fault = max(1, len(capable) // NODES_PER_FAULT)
    budget = min(len(PLAN_FAULTS) * per_fault, len(capable) // 2)
    order = [node["metadata"]["name"] for node, _ in capable]
    rng.shuffle(order)
    for i, name in enumerate(order[:budget]):
        faults[name] = PLAN_FAULTS[i % len(PLAN_FAULTS)]
    passing = order[budget:]

    plans: dict[str, NodeAttestation] = {}
    tdx_seen = 0
    for node, tee in capable:
        name = node["metadata"]["name"]
        info = node["status"]["nodeInfo"]
        if tee == "tdx":
            tdx_seen += 1
            maa_tee = "tdxvm" if tdx_seen % 3 == 0 else None
        else:
            maa_tee = "sevsnpvm"
        fault = faults.get(name)
        since = None
        if fault in MID_RUN_FAULTS:
            since = world.now - timedelta(hours=rng.uniform(6, 30))
        gpus = tuple(
            (gpu.uuid, gpu_ueid(world.seed, gpu.uuid))
            for gpu in sorted(gpus_by_node.get(name, []), key=lambda g: g.index)
        )
        plans[name] = NodeAttestation(
            node_name=name,
            tee=tee,
            cvm_provider="azure-maa" if maa_tee else "intel-ita",
            maa_tee=maa_tee,
            vm_id=azure_vm_id(info["systemUUID"]),
            system_uuid=info["systemUUID"],
            gpus=gpus,
            claims_version="2.0" if rng.random() < 0.2 else "3.0",
            fault=fault,
            fault_since=since,
            foreign_ueid=None,
            boots=_boots(rng, world.now, info["bootID"]),
        )
    for name, plan in plans.items():
        if plan.fault == "wrong_gpu" and passing:
            donor = plans[passing[rng.randrange(len(passing))]]
            if donor.gpus:
                plans[name] = replace(plan, foreign_ueid=donor.gpus[0][1])
    return plans


def _boots(rng: random.Random, now: datetime, current: str) -> tuple[tuple[datetime, str], ...]:
    started = now - timedelta(hours=rng.uniform(2, 20 * 24))
    boots = [(started, current)]
    horizon = now - timedelta(days=HISTORY_HORIZON_DAYS)
    while started > horizon:
        started = started - timedelta(days=rng.uniform(1, 25))
        bits = rng.getrandbits(128)
        bits = (bits & ~(0xF000 << 64)) | (0x4000 << 64)
        bits = (bits & ~(0xC000 << 48)) | (0x8000 << 48)
        h = f"{bits:032x}"
        boots.append((started, f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"))
    return tuple(reversed(boots))


__all__ = ["PLAN_FAULTS", "NodeAttestation", "attestation_plan"]
