"""convert, run and doctor on an Ascend host over SSH, through a real sshd on 127.0.0.1 (tests/infer/remote/sshd.py)
whose "remote" home holds CANN's env script putting the fake atc, msame, ais_bench and npu-smi on PATH.

The same flow here and there must give the same verdict and the same bytes; a second run sends nothing; a name with
shell metacharacters reaches the tool as one argument; the host's key is checked as ssh checks it; a connection cut
mid-transfer leaves nothing half-written and a rerun completes; every failure is one line naming the host."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from binio.binfile import sha256_file
from binio.manifest import load_manifest
from infer.compare import compare_outputs
from infer.contract import ConvertedInfo, ModelContract, SourceInfo, load_contract
from infer.convert import ConvertOptions, convert_model
from infer.remote import RemoteError, RemoteOptions
from infer.run import RunOptions, ScaleOptions, run_model
from infer.run.record import load_run
from tests.builders.bins import write_dataset
from tests.builders.frozen import freeze_by_hand
from tests.cli import run_cli
from tests.infer.remote.sshd import FAKES, SshServer, keygen
from tests.infer.run_data import cnn_batches, om_carrying, use_fake_tools
from tests.models import build_small_cnn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    root = tmp_path_factory.mktemp("cnn")
    return freeze_by_hand(build_small_cnn(root / "ckpt"), root / "frozen")


@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("bins") / "bins", {"images:0": cnn_batches(3)}).root


def _copy(contract: ModelContract, folder: Path) -> ModelContract:
    shutil.copytree(contract.folder, folder)
    return load_contract(folder / "model.json")


@dataclass(frozen=True)
class Flow:
    contract: ModelContract
    run_folder: Path
    verdict: str


@pytest.fixture(scope="module")
def here(frozen: ModelContract, bins: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    """convert (the fake atc), run (the fake msame), compare: on this machine."""
    root = tmp_path_factory.mktemp("here")
    with pytest.MonkeyPatch.context() as patch:
        use_fake_tools(patch)
        patch.setenv("FAKE_ATC_COMPILE", "onnx")
        patch.setenv("FAKE_NPU_SMI", "310P3_2cards.txt")
        contract = convert_model(_copy(frozen, root / "model"),
                                 ConvertOptions(target="om", soc_version="Ascend310P3", precision_mode="force_fp32"))
        run = run_model(contract.contract, bins, root / "out", RunOptions(backend="msame"))
    result = compare_outputs(contract.contract, bins, run.folder)
    yield Flow(contract.contract, run.folder, result.verdict_line())


@pytest.fixture(scope="module")
def there(sshd: SshServer, frozen: ModelContract, bins: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    """The same flow with ATC and msame on the host (the soc version from its npu-smi)."""
    root = tmp_path_factory.mktemp("there")
    contract = convert_model(_copy(frozen, root / "model"),
                             ConvertOptions(remote=sshd.options(), precision_mode="force_fp32")).contract
    run = run_model(contract, bins, root / "out", RunOptions(remote=sshd.options()))
    result = compare_outputs(contract, bins, run.folder)
    yield Flow(contract, run.folder, result.verdict_line())


def _outputs(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*_output_*.bin"))}


def test_the_flow_on_the_host_gives_the_local_verdict_and_bytes(here: Flow, there: Flow, sshd: SshServer) -> None:
    assert here.verdict.startswith("PASSED") and there.verdict.split(" | ")[0] == here.verdict.split(" | ")[0]
    local, remote = here.contract.converted, there.contract.converted
    assert local is not None and remote is not None
    assert remote.sha256 == local.sha256  # the om ATC built there is the one built here
    assert remote.soc_version == "Ascend310P3"  # npu-smi's chip there
    assert _outputs(there.run_folder) == _outputs(here.run_folder) and len(_outputs(here.run_folder)) == 3
    # model.json says where the om was built, as what, with what
    built = remote.settings["remote"]
    assert built["host"] == sshd.host and built["transfer"] == "rsync" and built["versions"]["cann"] == "7.0.0"
    assert built["env_script"] == str(sshd.home / "Ascend" / "ascend-toolkit" / "set_env.sh")
    assert built["tool"] == str(FAKES / "atc") and built["chips"] == ["310P3"]
    assert remote.command[0] == "atc" and remote.command[1].startswith(f"--model={built['workdir']}/models/")
    # run.json: where it ran, the host's command line, what was sent
    record = load_run(there.run_folder)
    assert record.remote is not None and record.remote.host == sshd.host
    assert record.device == f"msame device 0 on {sshd.host}"
    assert record.tool_command[:3] == ("msame", "--model", f"{record.remote.workdir}/models/om-{remote.sha256[:16]}"
                                                           "/model.om")
    assert record.remote.traffic.sent_files == 3 and record.remote.traffic.kept_files == 1  # the om stayed there
    assert record.remote.traffic.fetched_files == 3
    # the run's folder on the host is gone once fetched; the store keeps what was sent
    assert not list((Path(record.remote.workdir) / "runs").iterdir())
    # run.json's `remote` has the keys docs/contracts.md lists for it
    written = json.loads((there.run_folder / "run.json").read_text())["remote"]
    contracts = (Path(__file__).resolve().parents[3] / "docs" / "contracts.md").read_text()
    row = next(line for line in contracts.splitlines() if line.startswith("| `remote` |"))
    assert set(written) == set(re.findall(r"`(\w+)`", row.split("|")[2])) - {"seconds", "files", "bytes", "cann",
                                                                             "ais_bench", "npu_smi", "rsync", "sftp"}


def test_a_second_run_sends_nothing(there: Flow, sshd: SshServer, bins: Path, tmp_path: Path) -> None:
    again = run_model(there.contract, bins, tmp_path / "out", RunOptions(remote=sshd.options()))
    assert again.record.remote is not None
    traffic = again.record.remote.traffic
    assert (traffic.sent_files, traffic.sent_bytes, traffic.kept_files) == (0, 0, 4)
    assert _outputs(again.folder) == _outputs(there.run_folder)
    converted = convert_model(there.contract, ConvertOptions(remote=sshd.options(), precision_mode="force_fp32"))
    assert converted.contract.converted is not None
    assert converted.contract.converted.settings["remote"]["sent"]["files"] == 0


def test_ais_bench_and_sharding_over_devices_and_hosts_give_the_same_bytes(
        there: Flow, sshd: SshServer, bins: Path, tmp_path: Path) -> None:
    ais = run_model(there.contract, bins, tmp_path / "ais", RunOptions(backend="ais_bench", remote=sshd.options()))
    assert ais.record.tool_command[:3] == ("python3", "-m", "ais_bench")
    devices = run_model(there.contract, bins, tmp_path / "devices", RunOptions(remote=sshd.options()),
                        ScaleOptions(devices=(0, 1)))
    assert devices.record.scale_out is not None
    assert {s.device for s in devices.record.scale_out.shards} == {f"msame device {d} on {sshd.host}" for d in (0, 1)}
    two_hosts = replace(sshd.options(), host=(sshd.host, f"127.0.0.1:{sshd.port}"))  # one machine, two spellings
    hosts = run_model(there.contract, bins, tmp_path / "hosts", RunOptions(remote=two_hosts))
    assert hosts.record.remote is not None and hosts.record.remote.host == f"{sshd.host}, 127.0.0.1:{sshd.port}"
    for run in (ais, devices, hosts):
        assert _outputs(run.folder) == _outputs(there.run_folder)


def test_a_name_with_shell_metacharacters_arrives_as_one_argument(
        fresh_env: SshServer, there: Flow, bins: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sshd = fresh_env
    record = sshd.home / "atc-argv.json"
    sshd.fake_env(f"export FAKE_ATC_ARGV={record}\n")
    model = _copy(there.contract, tmp_path / "model")
    weird = "we ird'$(touch pwned);\"`id`.om"
    hostile = "--log=info; touch pwned2 $(touch pwned3)"
    host = [f"--host={sshd.host}", *(f"--ssh-option={o}" for o in sshd.options().ssh_options)]
    outcome = run_cli(capsys, "convert", model.path, "-o", model.folder / weird, f"--atc-arg={hostile}",
                      "--precision-mode", "force_fp32", *host)
    assert outcome.code == 0, outcome.err
    argv = json.loads(record.read_text())
    assert argv[-1] == hostile  # one argument, as given
    assert any(arg.endswith(f"/{weird.removesuffix('.om')}") and arg.startswith("--output=") for arg in argv)
    assert (model.folder / weird).is_file()
    ran = run_cli(capsys, "run", model.path, "--input", bins, "-o", tmp_path / "out", *host)
    assert ran.code == 0, ran.err
    assert load_run(tmp_path / "out").tool_command[2].endswith(f"/{weird}")
    pwned = [p for folder in (sshd.home, model.folder, Path.cwd(), tmp_path) for p in folder.rglob("pwned*")]
    assert pwned == []


def _known_hosts_with(sshd: SshServer, folder: Path, line: str) -> RemoteOptions:
    known = folder / "known_hosts"
    known.write_text(line)
    options = [o for o in sshd.options().ssh_options if not o.startswith("UserKnownHostsFile=")]
    return replace(sshd.options(), ssh_options=(f"UserKnownHostsFile={known}", *options))


def test_a_changed_host_key_is_refused_with_ssh_s_reason(sshd: SshServer, there: Flow, bins: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other_key"
    keygen(other)
    changed = f"[127.0.0.1]:{sshd.port} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n"
    options = _known_hosts_with(sshd, tmp_path, changed)
    with pytest.raises(RemoteError, match=rf"^{sshd.host}: ssh refused the host's key while connecting: .*"):
        run_model(there.contract, bins, tmp_path / "out", RunOptions(remote=options))
    outcome = run_cli(capsys, "doctor", "--host", sshd.host, *(f"--ssh-option={o}" for o in options.ssh_options))
    assert outcome.code == 2
    assert outcome.error_line.startswith(f"error: {sshd.host}: ssh refused the host's key while connecting:")
    assert "IDENTIFICATION HAS CHANGED" in outcome.err and "ssh-keygen -R" in outcome.err
    assert (tmp_path / "known_hosts").read_text() == changed  # nothing accepted, nothing written
    unknown = _known_hosts_with(sshd, tmp_path, "")
    with pytest.raises(RemoteError, match=r"ssh refused the host's key while connecting: Host key verification failed"):
        run_model(there.contract, bins, tmp_path / "out", RunOptions(remote=unknown))
    assert (tmp_path / "known_hosts").read_text() == ""


def test_an_unreachable_host_and_a_refused_key_are_one_line_each(
        sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.infer.remote.sshd import free_port

    port = free_port()
    outcome = run_cli(capsys, "doctor", "--host", f"127.0.0.1:{port}")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: 127.0.0.1:{port}: unreachable while connecting: ssh: connect to host "
                                  f"127.0.0.1 port {port}: Connection refused")
    stranger = tmp_path / "stranger"
    keygen(stranger)
    options = [o if not o.startswith("IdentityFile=") else f"IdentityFile={stranger}" for o in
               sshd.options().ssh_options]
    outcome = run_cli(capsys, "doctor", "--host", sshd.host, *(f"--ssh-option={o}" for o in options))
    assert outcome.code == 2
    assert outcome.error_line.startswith(f"error: {sshd.host}: no key of yours is accepted while connecting: ")
    assert "BatchMode=yes and never asks for a password" in outcome.error_line and "ssh-copy-id" in outcome.err


def test_a_missing_tool_an_old_cann_and_a_full_disk_are_one_line_each(
        fresh_env: SshServer, there: Flow, bins: Path, tmp_path: Path) -> None:
    sshd = fresh_env
    without = tmp_path / "no-msame"
    without.mkdir()
    for tool in ("atc", "npu-smi"):
        (without / tool).symlink_to(FAKES / tool)
    sshd.fake_env(f'export PATH="{without}:{Path(sys.executable).parent}:/usr/bin:/bin"\n')
    with pytest.raises(RemoteError, match=rf"^{sshd.host}: msame: not found on the host's PATH \(env script .*"
                                          r"set_env.sh \(found there\)\)$"):
        run_model(there.contract, bins, tmp_path / "out", RunOptions(remote=sshd.options()))
    assert not list((tmp_path / "out").glob("*/*_output_*"))
    sshd.fake_env("")
    version = sshd.home / "Ascend" / "ascend-toolkit" / "latest" / "compiler" / "version.info"
    version.write_text("Version=3.3.0.alpha001\n")
    try:
        with pytest.raises(RemoteError, match=rf"^{sshd.host}: CANN 3.3.0.alpha001 .* is older than 5.0"):
            convert_model(_copy(there.contract, tmp_path / "model"), ConvertOptions(remote=sshd.options()))
    finally:
        version.write_text("Version=7.0.0\n")
    sshd.host_tool("df", "#!/bin/sh\nprintf 'Filesystem 1024-blocks Used Available Capacity Mounted on\\n"
                         "/dev/full 100 100 0 100%% /\\n'\n")
    fresh = write_dataset(tmp_path / "fresh", {"images:0": cnn_batches(2, seed=9)}).root
    try:
        with pytest.raises(RemoteError, match=rf"^{sshd.host}: the host's disk is full under .*\.infer-remote: "
                                              r"0\.0 MB to send, 0\.0 MB free"):
            run_model(there.contract, fresh, tmp_path / "out", RunOptions(remote=sshd.options()))
    finally:
        sshd.host_tool("df", None)


def _big_model(folder: Path) -> ModelContract:
    """x:0 float32 (1, 1000, 1000) -> mean:0 (1,): 4 MB a batch, as an om the fakes run wherever it is copied."""
    from onnx import TensorProto, helper

    folder.mkdir(parents=True)
    graph = helper.make_graph([helper.make_node("ReduceMean", ["x:0"], ["mean:0"], axes=[1, 2], keepdims=0)], "big",
                              [helper.make_tensor_value_info("x:0", TensorProto.FLOAT, [1, 1000, 1000])],
                              [helper.make_tensor_value_info("mean:0", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    om = om_carrying(folder / "model.om", model.SerializeToString())
    from binio.spec import TensorSpec

    inputs, outputs = (TensorSpec("x:0", "float32", (1, 1000, 1000)),), (TensorSpec("mean:0", "float32", (1,)),)
    return ModelContract(path=folder / "model.json", pb="model.pb", pb_sha256="",
                         source=SourceInfo(path="onnx.helper", kind="pb", tf_version="", frozen_with_tf=""),
                         inputs=inputs, outputs=outputs,
                         converted=ConvertedInfo(target="om", path="model.om", sha256=sha256_file(om), inputs=inputs,
                                                 outputs=outputs, soc_version="Ascend310P3")).save()


def test_a_connection_killed_mid_transfer_leaves_nothing_half_written_and_a_rerun_completes(
        sshd: SshServer, tmp_path: Path) -> None:
    model = _big_model(tmp_path / "model")
    rng = np.random.default_rng(11)
    data = write_dataset(tmp_path / "bins", {"x:0": [rng.standard_normal((1, 1000, 1000)).astype(np.float32)
                                                     for _ in range(16)]}).root
    store = sshd.home / ".infer-remote" / "store"
    failure: list[BaseException] = []

    def cut_mid_transfer() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # rsync writes a file under a temporary .name until it is whole
            if store.is_dir() and any(p.name.startswith(".") for p in store.rglob("*")):
                for pid in sshd.sessions():  # every connection's sshd: the run's master among them
                    os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.005)

    watcher = threading.Thread(target=cut_mid_transfer)
    watcher.start()
    try:
        run_model(model, data, tmp_path / "out", RunOptions(remote=sshd.options()))
    except RemoteError as exc:
        failure.append(exc)
    watcher.join()
    assert failure, "the transfer finished before the connection was cut"
    message = str(failure[0])
    assert message.startswith(f"{sshd.host}: the connection dropped while sending files (rsync, exit "), message
    [cut] = (tmp_path / "out").iterdir()
    assert not list(cut.rglob("*_output_*.bin"))  # no output in the layout: nothing half-written
    assert json.loads((cut / "run.json").read_text())["completed"] is False
    whole = {p.name for p in store.glob("*/xxh128-*") if p.stat().st_size == 4_000_000}  # rsync's partial files
    assert len(whole) < 16                                                            # lie in .infer-partial/
    om_there = bool(list(store.glob(f"*/sha256-{model.converted.sha256}")))  # type: ignore[union-attr]
    again = run_model(model, data, tmp_path / "out", RunOptions(remote=sshd.options()), ScaleOptions(resume=True))
    assert again.folder == cut and again.record.completed and len(again.record.stems) == 16  # --resume: its folder
    assert again.record.remote is not None  # what had arrived whole is not sent again
    assert again.record.remote.traffic.sent_files == 16 - len(whole) + (0 if om_there else 1)
    folder = data / load_manifest(data).inputs[0].folder
    expected = [np.fromfile(path, np.float32).mean() for path in sorted(folder.glob("*.bin"))]
    got = [np.fromfile(again.folder / f"{i:06d}_output_0.bin", np.float32)[0] for i in range(16)]
    assert np.allclose(got, expected)


def test_doctor_says_what_the_host_has(sshd: SshServer, capsys: pytest.CaptureFixture[str]) -> None:
    host = ["--host", sshd.host, *(f"--ssh-option={o}" for o in sshd.options().ssh_options)]
    outcome = run_cli(capsys, "doctor", *host)
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    assert lines[0].startswith(f"{sshd.host} (ssh, one connection;")
    assert f"  ok atc               {FAKES / 'atc'} (CANN 7.0.0)" in lines
    assert f"  ok env script       {sshd.home}/Ascend/ascend-toolkit/set_env.sh (found there)" in lines
    assert ("  ok npu-smi          2 NPU chip(s): 310P3 on devices 0, 1 (--soc-version Ascend310P3)") in lines
    assert "  ok files            rsync (the host has rsync)" in lines
    report = json.loads(run_cli(capsys, "doctor", "--json", *host).out)
    from tests.test_json_output import _agrees, _documented

    assert _agrees(report, _documented()["doctor --host HOST --json"]) == []
    assert report["schema"] == "infer.doctor-host" and report["npu"]["chips"][1]["device"] == 1
    assert report["tools"]["msame"]["path"] == str(FAKES / "msame") and report["transfer"] == "rsync"


def _atc_there(sshd: SshServer) -> list[str]:
    """The pids of the fake atc processes on the host of this server (their argv names its working folder)."""
    import subprocess

    found = subprocess.run(["pgrep", "-f", f"fakes/atc --model={sshd.home}"], capture_output=True, text=True)
    return found.stdout.split()


def test_a_hung_tool_is_stopped_there_and_a_connection_cut_mid_run_ends_it_too(
        fresh_env: SshServer, there: Flow, tmp_path: Path) -> None:
    sshd = fresh_env
    sshd.fake_env("export FAKE_ATC_MODE=hang\n")
    model = _copy(there.contract, tmp_path / "model")
    before = (model.folder / "model.om").read_bytes()
    with pytest.raises(RemoteError, match=rf"^{sshd.host}: atc: no result after 3 s; stopped it \(its terminal "
                                          r"closed with it: the host ends it\)$"):
        convert_model(model, ConvertOptions(remote=sshd.options(), timeout=3))
    deadline = time.monotonic() + 10
    while _atc_there(sshd) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _atc_there(sshd) == []  # SIGHUP from its closed terminal ended it: no ATC left holding the host
    assert (model.folder / "model.om").read_bytes() == before  # the model folder as it was

    def cut_while_atc_runs() -> None:
        deadline = time.monotonic() + 60
        while not _atc_there(sshd) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pid in sshd.sessions():
            os.kill(pid, signal.SIGKILL)

    watcher = threading.Thread(target=cut_while_atc_runs)
    watcher.start()
    with pytest.raises(RemoteError, match=rf"^{sshd.host}: the connection dropped while running atc: "):
        convert_model(model, ConvertOptions(remote=sshd.options(), timeout=120))
    watcher.join()
    deadline = time.monotonic() + 10
    while _atc_there(sshd) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _atc_there(sshd) == []
    assert (model.folder / "model.om").read_bytes() == before


def test_many_bins_are_linked_from_a_list_sent_with_them(there: Flow, sshd: SshServer, tmp_path: Path) -> None:
    """400 bins: their links' paths pass what one command line may carry, so they go as a list file."""
    many = write_dataset(tmp_path / "many", {"images:0": cnn_batches(400, seed=4)}).root
    run = run_model(there.contract, many, tmp_path / "out", RunOptions(remote=sshd.options()))
    assert run.record.completed and len(run.record.stems) == 400
    assert run.record.remote is not None and run.record.remote.traffic.sent_files == 400
    again = run_model(there.contract, many, tmp_path / "out", RunOptions(remote=sshd.options()))
    assert again.record.remote is not None and again.record.remote.traffic.sent_files == 0
    assert _outputs(again.folder) == _outputs(run.folder)
    assert not list((sshd.home / ".infer-remote" / "runs").glob(".links-*"))  # the list removed once read


def test_a_dry_run_prints_atc_as_it_would_run_there_and_sends_nothing(
        there: Flow, sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _copy(there.contract, tmp_path / "model")
    before = model.path.read_bytes()
    stored = sorted((sshd.home / ".infer-remote" / "store").rglob("*"))
    outcome = run_cli(capsys, "convert", model.path, "--dry-run", "--host", sshd.host,
                      *(f"--ssh-option={o}" for o in sshd.options().ssh_options))
    assert outcome.code == 0, outcome.err
    workdir = sshd.home / ".infer-remote"
    assert outcome.out.startswith(f"atc --model={workdir}/models/{model.pb_sha256[:16]}/model.pb --framework=3 "
                                  f"--output={workdir}/models/{model.pb_sha256[:16]}/model --soc_version=Ascend310P3 ")
    assert f"{sshd.host}: --soc-version Ascend310P3, the chip npu-smi info reports there" in outcome.err
    assert model.path.read_bytes() == before and sorted((workdir / "store").rglob("*")) == stored
