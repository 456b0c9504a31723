"""`RemoteOptions`: one declaration for --host and its flags, the pipeline's [remote] table, and what neither takes
(a host that ssh would read as an option, an ssh option that runs a command here or weakens the host key check)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from infer._option_fields import flag_args
from infer.pipeline.config import ConfigError, config_from_dict
from infer.remote import RemoteError, RemoteOptions
from infer.remote._host import cann_too_old, inside
from infer.remote._shell import ended, remote_command
from infer.remote.options import check_ssh_option, parse_host
from infer.run.options import RunError, RunOptions
from tests.cli import run_cli


@pytest.mark.parametrize(("text", "host", "user", "port"), [
    ("ascend01", "ascend01", "", None), ("me@10.0.0.5:2222", "10.0.0.5", "me", 2222),
    ("[fe80::1]:22", "fe80::1", "", 22), ("HwHiAiUser@atlas-200.lab", "atlas-200.lab", "HwHiAiUser", None)])
def test_a_host_as_ssh_takes_it(text: str, host: str, user: str, port: int | None) -> None:
    address = parse_host(text)
    assert (address.host, address.user, address.port) == (host, user, port)
    assert address.ssh_args()[-1] == (f"{user}@{host}" if user else host)


@pytest.mark.parametrize("text", ["-oProxyCommand=touch x", "host;rm -rf ~", "$(reboot)", "a b", "me@", "h:0",
                                  "h:99999", ""])
def test_a_host_ssh_would_read_as_an_option_or_a_shell_would_act_on_is_refused(text: str) -> None:
    with pytest.raises(RemoteError, match=r"--host"):
        RemoteOptions(host=(text,))


@pytest.mark.parametrize("option", ["StrictHostKeyChecking=no", "BatchMode=no", "ControlPath=/tmp/x",
                                    "ProxyCommand=nc %h %p", "LocalCommand=touch x", "KnownHostsCommand=/bin/true",
                                    "IdentityFile='/a b'", "NoEquals"])
def test_an_ssh_option_that_weakens_the_check_or_runs_a_command_here_is_refused(option: str) -> None:
    with pytest.raises(RemoteError, match="--ssh-option"):
        check_ssh_option(option)


def test_allowed_ssh_options_are_spelled_as_ssh_documents_them() -> None:
    assert check_ssh_option("identityfile=~/.ssh/ascend") == "IdentityFile=~/.ssh/ascend"
    assert check_ssh_option("ProxyJump bastion") == "ProxyJump=bastion"


@pytest.mark.parametrize("workdir", ["relative/dir", "~/../etc", "/a/../b"])
def test_the_working_folder_is_absolute_or_under_the_home(workdir: str) -> None:
    with pytest.raises(ConfigError, match=r"\[remote\] workdir"):
        _config({"host": "ascend01", "workdir": workdir})


@pytest.mark.parametrize("part", ["../escape", "/etc/passwd", "", "a\tb", "a\nb", "x/../../y"])
def test_host_paths_stay_inside_the_working_folder(part: str) -> None:
    with pytest.raises(RemoteError, match="not a path inside the host's working folder"):
        inside("/home/me/.infer-remote", part)
    assert inside("/w", "models/ab", "model.om") == "/w/models/ab/model.om"


def test_the_remote_flags_need_a_host(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outcome = run_cli(capsys, "run", str(tmp_path / "model.json"), "--input", str(tmp_path), "-o", str(tmp_path),
                      "--env-script", "/opt/set_env.sh")
    assert outcome.code == 2
    assert "error: --env-script without --host: these say how to reach the Ascend host" in outcome.err
    outcome = run_cli(capsys, "doctor", "--remote-workdir", "/tmp/x")
    assert outcome.code == 2 and "give --host too" in outcome.err


def _config(remote: dict[str, object]) -> object:
    document = {"model": {"source": "m.ckpt", "outputs": ["probs:0"]}, "data": {"source": "random:0"},
                "remote": remote}
    return config_from_dict(document, Path("/nowhere/pipeline.toml"))


def test_the_pipelines_remote_table_is_the_same_options_and_its_commands_carry_host() -> None:
    config = _config({"host": "ascend01", "env_script": "/usr/local/Ascend/nnrt/set_env.sh",
                      "ssh_options": ["IdentityFile=~/.ssh/ascend"]})
    remote = config.remote  # type: ignore[attr-defined]
    assert remote == RemoteOptions(host=("ascend01",), env_script="/usr/local/Ascend/nnrt/set_env.sh",
                                   ssh_options=("IdentityFile=~/.ssh/ascend",))
    assert flag_args(RunOptions(remote=remote)) == [
        "--host", "ascend01", "--env-script", "/usr/local/Ascend/nnrt/set_env.sh", "--ssh-option",
        "IdentityFile=~/.ssh/ascend"]


@pytest.mark.parametrize(("table", "message"), [
    ({}, r"\[remote\] host: missing"),
    ({"host": "ascend01", "hots": 1}, r"\[remote\] hots: unknown key"),
    ({"host": ["a", 3]}, r"\[remote\] host: expected a host name or a list of them"),
    ({"host": "a", "ssh_options": ["StrictHostKeyChecking=no"]}, r"infer keeps ssh's host key check"),
    ({"host": "a", "workdir": "rel"}, r"expected an absolute folder on the host"),
])
def test_a_bad_remote_table_is_one_line_naming_the_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(table)


def test_cann_releases_before_5_0_are_told_apart() -> None:
    assert [cann_too_old(v) for v in ("3.3.0.alpha001", "20.2.0", "5.0.4", "5.1.RC2", "7.0.0", "8.0.RC1", "")] == [
        True, True, False, False, False, False, False]


# The remote command line: a real shell (as the host's login shell does) parses what ssh hands it.

def _as_the_host_runs_it(argv: list[str], tmp_path: Path) -> list[str]:
    command = remote_command(["python3", "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *argv],
                             cwd=str(tmp_path))
    done = subprocess.run(["sh", "-c", command.text], capture_output=True, text=True, cwd=tmp_path, check=False)
    end = ended(done.stdout, command.nonce, done.returncode)
    assert end.status == "exit" and end.code == 0, done.stderr
    import json

    parsed: list[str] = json.loads(end.output)
    return parsed


def test_a_name_with_shell_metacharacters_reaches_the_tool_as_one_argument(tmp_path: Path) -> None:
    names = ["we ird'name\".om", "$(touch pwned)", "; touch pwned2 #", "`id`", "a\\b", "--model=x y", "*"]
    assert _as_the_host_runs_it(names, tmp_path) == names
    assert not list(tmp_path.glob("pwned*"))


def test_the_end_marker_gives_the_tools_own_exit_and_output() -> None:
    text = "line one\r\nline two\r\n\r\ninfer-remote-abc exit 255\r\nShared connection to h closed.\r\n"
    end = ended(text, "infer-remote-abc", 255)
    assert (end.status, end.code, end.output) == ("exit", 255, "line one\nline two\n")
    cut = ended("uploading...\n", "infer-remote-abc", 255)
    assert cut.status == "" and cut.code == 255  # no marker: the connection, not the tool


def test_a_dry_run_with_a_host_connects_to_nothing_and_says_where_it_would_run(tmp_path: Path) -> None:
    from infer.run import plan_run
    from tests.builders.bins import write_dataset
    from tests.infer.run_data import two_input_batches, two_input_model

    model = two_input_model(tmp_path / "model", "om")
    bins = write_dataset(tmp_path / "bins", two_input_batches()).root
    plan = plan_run(model, bins, tmp_path / "out", RunOptions(dry_run=True, remote=RemoteOptions(host=("ascend01",))))
    assert plan.backend == "msame" and plan.commands[0][0] == "msame"
    assert "on ascend01 (the run sends the om and the bins there first" in plan.summary
    with pytest.raises(RunError, match=r"^--host with --backend onnxrt: the host runs msame or ais_bench on an om"):
        plan_run(two_input_model(tmp_path / "onnx", "onnx"), bins, tmp_path / "out",
                 RunOptions(dry_run=True, backend="onnxrt", remote=RemoteOptions(host=("ascend01",))))
