"""Which software each rule declares (Snakemake's own API on the parsed workflow): with a GPU image configured no rule
declares both a conda environment and the image, since `--sdm conda apptainer` would build the environment inside
the image, which has no conda; without one the GPU rules keep their environments; the training preflight checks
train_ppo's own environment, never an image."""

from __future__ import annotations

import pytest
import yaml
from helpers import CONFIG, workflow_query


def rule_software(tmp_path, *configfiles) -> dict[str, list]:
    """rule -> [its conda environment file or None, its container or None], as Snakemake parsed them."""
    expression = "{r.name: [str(r.conda_env) if r.conda_env else None, r.container_img] for r in wf.rules}"
    return workflow_query(tmp_path, expression, *configfiles)


@pytest.mark.workflow
def test_no_rule_declares_both_a_conda_environment_and_the_gpu_image(tmp_path):
    image = tmp_path / "image.yaml"
    image.write_text(yaml.safe_dump({"containers": {"gpu": "docker://example.org/brorl-gpu:1"}}))
    with_image = rule_software(tmp_path / "a", CONFIG, image)
    in_image = {name for name, (conda, container) in with_image.items() if container}
    assert len(in_image) == 7 and {"generate_samples", "generate_in_batch", "bench_throughput"} <= in_image, in_image
    assert not [name for name in in_image if with_image[name][0]], with_image
    without = rule_software(tmp_path / "b", CONFIG)
    assert all(without[name][0] and "eval.yaml" in without[name][0] for name in in_image), without
    for software in (with_image, without):  # the training preflight checks what train_ppo runs with
        assert software["preflight_train_node"][1] is None and "train.yaml" in software["preflight_train_node"][0]
        assert software["train_ppo"] == software["preflight_train_node"]
