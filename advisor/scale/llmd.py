"""`recommend --format llm-d`: the deployment at scale as llm-d runs it, written for llm-d's layout as llm-d-planner
0.3.3 generates it (planner/configuration/templates/llmd/): the model servers as a Kustomize overlay
(modelserver/kustomization.yaml and its objects) and the router, llm-d's inference scheduler (EPP), as Helm values
for gateway-api-inference-extension's standalone chart (scheduler/values.yaml) with its prefill/decode plugins.

The objects are whole (apps/v1 Deployment for one node, LeaderWorkerSet leaderworkerset.x-k8s.io/v1 for several:
llm-d's wide-EP guides), not patches, so they apply without a base. Each container runs the very `vllm serve`
argv the text report pastes (`advisor.scale.serve`), node 0's address taken from LeaderWorkerSet's
LWS_LEADER_ADDRESS and each worker's start rank from LWS_WORKER_INDEX; under PD each pod tells NIXL its own address
(VLLM_NIXL_SIDE_CHANNEL_HOST from status.podIP).
"""

from __future__ import annotations

import shlex

from advisor.fileio.yaml_text import dump
from advisor.model.parallel.deployment import Deployment
from advisor.scale.advise import ScaleAdvice
from advisor.scale.serve import DECODE_ADDRESS, LEADER_ADDRESS, PREFILL_ADDRESS, decode_commands, prefill_commands
from advisor.vllm.kv_transfer import NIXL_SIDE_CHANNEL_ENV, SERVE_PORT

IMAGE = "vllm/vllm-openai:v0.32.0"  # the vLLM release every flag is read from (advisor.vllm.defaults.VLLM_SERIES)
SCHEDULER_IMAGE = {"registry": "ghcr.io", "repository": "llm-d/llm-d-inference-scheduler", "tag": "v0.8.0"}
ROLE_LABEL = "llm-d.ai/role"  # llm-d's inference scheduler tells the pools apart by it (prefill-filter, decode-filter)
GPU_RESOURCE = "nvidia.com/gpu"
ADDRESSES = (LEADER_ADDRESS, DECODE_ADDRESS, PREFILL_ADDRESS)


def argv(command: str) -> list[str]:
    """A pasted `vllm serve` line's words after `vllm serve`, as the shell passes them."""
    return shlex.split(command)[2:]


def _container(words: list[str], gpus: int, nixl: bool, shell: bool) -> dict:
    container = {"name": "modelserver", "image": IMAGE}
    if shell:  # a LeaderWorkerSet pod computes its start rank: sh -c with the command line
        container |= {"command": ["/bin/sh", "-c"], "args": ["exec vllm serve " + " ".join(words)]}
    else:
        container |= {"command": ["vllm", "serve"], "args": words}
    container["ports"] = [{"containerPort": SERVE_PORT, "name": "http"}]
    if nixl:
        container["env"] = [{"name": NIXL_SIDE_CHANNEL_ENV, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    container["resources"] = {"requests": {GPU_RESOURCE: str(gpus)}, "limits": {GPU_RESOURCE: str(gpus)}}
    return container


def _pod(app: str, role: str, container: dict) -> dict:
    return {"metadata": {"labels": {"app": app, ROLE_LABEL: role}}, "spec": {"containers": [container]}}


def _object(app: str, role: str, d: Deployment, commands: list[str], replicas: int, nixl: bool) -> dict:
    """One pool: a Deployment of one-node instances, or a LeaderWorkerSet of `d.nodes`-node instances."""
    name = f"{app}-{role}"
    if d.nodes == 1:
        pod = _pod(app, role, _container(argv(commands[0]), d.gpus, nixl, shell=False))
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": app}},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app, ROLE_LABEL: role}},
                         "template": pod}}
    leader = _shell_words(commands[0])
    worker = _shell_words(commands[1])
    rank = str(d.ranks_per_node)
    start = worker.index("--data-parallel-start-rank") + 1
    worker[start] = f"$((LWS_WORKER_INDEX*{rank}))"  # one word for sh
    per_node = d.gpus_per_node
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {
                "size": d.nodes,
                "leaderTemplate": _pod(app, role, _container(leader, per_node, nixl, shell=True)),
                "workerTemplate": _pod(app, role, _container(worker, per_node, nixl, shell=True))}}}


def _shell_words(command: str) -> list[str]:
    """The words after `vllm serve`, quoted for sh -c, node 0's address LeaderWorkerSet's."""
    words = [shlex.quote(w) for w in argv(command)]
    for i, word in enumerate(words):
        if word.strip("'\"") in [a.strip('"') for a in ADDRESSES]:
            words[i] = '"$LWS_LEADER_ADDRESS"'
    return words


def scheduler_values(app: str, pd: bool) -> dict:
    """Helm values of llm-d's inference scheduler (EPP) for the pool: prefix-cache scoring, and under PD llm-d's
    prefill/decode profiles (pd-profile-handler sends a request's prompt to a prefill pod, its decode to a decode
    pod; the plugin names are llm-d-inference-scheduler's)."""
    if pd:
        plugins = [{"type": "prefill-header-handler"}, {"type": "prefix-cache-scorer"}, {"type": "prefill-filter"},
                   {"type": "decode-filter"}, {"type": "max-score-picker"},
                   {"type": "pd-profile-handler", "parameters": {"threshold": 0}}]
        profiles = [{"name": role, "plugins": [{"pluginRef": f"{role}-filter"}, {"pluginRef": "max-score-picker"},
                                                {"pluginRef": "prefix-cache-scorer", "weight": 2}]}
                    for role in ("prefill", "decode")]
    else:
        plugins = [{"type": "prefix-cache-scorer"}, {"type": "decode-filter"}, {"type": "max-score-picker"},
                   {"type": "single-profile-handler"}]
        profiles = [{"name": "default", "plugins": [{"pluginRef": "decode-filter"}, {"pluginRef": "max-score-picker"},
                                                    {"pluginRef": "prefix-cache-scorer", "weight": 2}]}]
    config = {"apiVersion": "llm-d.ai/v1alpha1", "kind": "EndpointPickerConfig", "plugins": plugins,
              "schedulingProfiles": profiles}
    return {"inferenceExtension": {"replicas": 1, "image": SCHEDULER_IMAGE, "failureMode": "FailOpen",
                                   "pluginsConfigFile": f"{app}-plugins.yaml",
                                   "pluginsCustomConfig": {f"{app}-plugins.yaml": dump(config)}},
            "inferencePool": {"modelServers": {"matchLabels": {"app": app}},
                              "targetPorts": [{"number": SERVE_PORT}], "appProtocol": "http"}}


def files(a: ScaleAdvice, app: str = "specadvisor") -> dict[str, dict]:
    """Each file's path and content; {} where the target does not fit (nothing to deploy)."""
    decode = decode_commands(a)
    if not decode:
        return {}
    d = a.deployment
    pools = {"decode": _object(app, "decode", d, decode, 1, d.disaggregated)}
    prefill = prefill_commands(a)
    if prefill:
        pools["prefill"] = _object(app, "prefill", a.prefill_pool.instance, prefill, a.prefill_pool.instances, True)
    out = {f"modelserver/{role}.yaml": obj for role, obj in pools.items()}
    out = {"modelserver/kustomization.yaml": {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                                              "resources": [path.split("/")[1] for path in out]}, **out}
    out["scheduler/values.yaml"] = scheduler_values(app, bool(prefill))
    return out


def render(a: ScaleAdvice) -> str:
    """The files as one YAML stream, each headed by its path; one comment line where the target does not fit."""
    found = files(a)
    if not found:
        return f"# no llm-d files: {a.does_not_fit}\n"
    return "".join(f"---\n# {path}\n{dump(content)}" for path, content in found.items())
