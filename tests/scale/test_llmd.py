"""advisor/scale/llmd.py: the llm-d files parse as YAML, their Kubernetes objects load as the Kubernetes client's
own types (apps/v1 Deployment), and every container runs exactly the pasted `vllm serve` flags."""

import shlex

import pytest

from advisor.model.parallel.deployment import Deployment
from advisor.scale import llmd
from advisor.scale.load import answer
from advisor.scale.serve import decode_commands, prefill_commands
from tests.scale_scenarios import scenario

yaml = pytest.importorskip("yaml")

WIDE = dict(data_parallel_size=16, enable_expert_parallel=True, nodes=2, all2all_backend="deepep_low_latency",
            enable_dbo=True)


def documents(a):
    text = llmd.render(a)
    docs = list(yaml.safe_load_all(text))
    paths = [line[2:] for line in text.splitlines() if line.startswith("# ")]
    return dict(zip(paths, docs))


def container_argv(pod: dict) -> list[str]:
    c = pod["spec"]["containers"][0]
    if c["command"] == ["vllm", "serve"]:
        return c["args"]
    words = shlex.split(c["args"][0])
    assert words[:3] == ["exec", "vllm", "serve"]
    return words[3:]


def test_pd_files_carry_the_pasted_flags_in_both_pools():
    a = answer(scenario(batch=2048), Deployment(**WIDE, disaggregated=True))
    found = documents(a)
    assert set(found) == {"modelserver/kustomization.yaml", "modelserver/decode.yaml", "modelserver/prefill.yaml",
                          "scheduler/values.yaml"}
    assert found["modelserver/kustomization.yaml"]["resources"] == ["decode.yaml", "prefill.yaml"]
    decode = found["modelserver/decode.yaml"]
    assert decode["kind"] == "LeaderWorkerSet" and decode["spec"]["leaderWorkerTemplate"]["size"] == 2
    lws = decode["spec"]["leaderWorkerTemplate"]
    pasted = [shlex.split(c)[2:] for c in decode_commands(a)]
    leader, worker = container_argv(lws["leaderTemplate"]), container_argv(lws["workerTemplate"])
    address = pasted[0].index("--data-parallel-address") + 1
    assert leader[address] == "$LWS_LEADER_ADDRESS" and pasted[0][:address] == leader[:address]
    start = worker.index("--data-parallel-start-rank") + 1
    assert worker[start] == "$((LWS_WORKER_INDEX*8))" and worker[:address] == pasted[1][:address]
    prefill = found["modelserver/prefill.yaml"]
    assert container_argv(prefill["spec"]["template"]) == shlex.split(prefill_commands(a)[0])[2:]
    assert prefill["spec"]["replicas"] == a.prefill_pool.instances
    config = yaml.safe_load(next(iter(found["scheduler/values.yaml"]["inferenceExtension"]["pluginsCustomConfig"]
                                      .values())))
    assert {p["type"] for p in config["plugins"]} >= {"pd-profile-handler", "prefill-filter", "decode-filter"}
    assert [p["name"] for p in config["schedulingProfiles"]] == ["prefill", "decode"]


def test_a_one_node_deployment_is_a_kubernetes_deployment_the_client_reads():
    kubernetes = pytest.importorskip("kubernetes")
    a = answer(scenario(batch=1024), Deployment(data_parallel_size=8, enable_expert_parallel=True))
    found = documents(a)
    body = found["modelserver/decode.yaml"]
    client = kubernetes.client.ApiClient()
    read = client._ApiClient__deserialize(body, "V1Deployment")  # the client's own model, its validation on
    assert isinstance(read, kubernetes.client.V1Deployment)
    container = read.spec.template.spec.containers[0]
    assert container.command == ["vllm", "serve"] and container.args == shlex.split(decode_commands(a)[0])[2:]
    assert container.resources.limits == {"nvidia.com/gpu": "8"}
    assert read.spec.selector.match_labels.items() <= read.spec.template.metadata.labels.items()
    assert "modelserver/prefill.yaml" not in found


def test_nothing_to_deploy_where_the_target_does_not_fit():
    a = answer(scenario(target="glm-5.2", batch=64), Deployment(data_parallel_size=8, enable_expert_parallel=True))
    assert llmd.render(a).startswith("# no llm-d files: GLM-5.2 (bf16) does not fit")
