"""``./run_all.sh --lab`` opens the course in JupyterLab with the project's kernel.

The test starts that command headless on a free 127.0.0.1 port with a token, lists the notebooks
through the server's REST API, opens notebook 01 as JupyterLab would (a session on the
"fast-decoding" kernel) and runs its cells, with the smoke preset, over the kernel's websocket.
Jupyter's data, config and runtime folders and the notebook's run folder are temporary.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest
import requests
import websocket  # websocket-client (declared in the test extra)

pytestmark = pytest.mark.notebook  # runs notebook 01's cells in a JupyterLab kernel

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = "notebooks/01_naive_generation.ipynb"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lab")
    port, token = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env.update(PYTHON=sys.executable, JUPYTER_DATA_DIR=str(tmp / "data"),
               JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               COURSE_RUN_DIR=str(tmp / "run"))
    log = open(tmp / "lab.log", "w")
    proc = subprocess.Popen(
        ["./run_all.sh", "--lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly"],  # as root run_all.sh adds --allow-root itself
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"token {token}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp / "lab.log").read_text()
            assert time.monotonic() < deadline, (tmp / "lab.log").read_text()
            try:
                if requests.get(f"{base}/api/status", headers=headers, timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            time.sleep(0.3)
        yield {"base": base, "headers": headers, "port": port, "token": token, "tmp": tmp}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the server and the kernels it started
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_lab_requires_the_token(lab):
    assert requests.get(f"{lab['base']}/api/contents/notebooks", timeout=5).status_code == 403


def test_lab_lists_the_notebooks_and_has_the_project_kernel(lab):
    listing = requests.get(f"{lab['base']}/api/contents/notebooks", headers=lab["headers"],
                           timeout=10).json()
    names = {item["name"] for item in listing["content"]}
    assert {p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")} <= names
    specs = requests.get(f"{lab['base']}/api/kernelspecs", headers=lab["headers"], timeout=10).json()
    assert specs["default"] == "fast-decoding"
    argv = specs["kernelspecs"]["fast-decoding"]["spec"]["argv"]
    assert os.path.samefile(argv[0], sys.executable)


class Kernel:
    """The Jupyter messaging protocol over the server's kernel websocket, just enough to run cells."""

    def __init__(self, lab, kernel_id):
        url = (f"ws://127.0.0.1:{lab['port']}/api/kernels/{kernel_id}/channels"
               f"?token={lab['token']}")
        self.ws = websocket.create_connection(url, timeout=120)
        self.session = uuid.uuid4().hex

    def run(self, code: str) -> tuple[dict, list[dict]]:
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "session": self.session, "username": "test",
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        outputs, reply, idle = [], None, False
        while reply is None or not idle:  # shell and iopub messages arrive in any order
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["channel"] == "iopub" and msg["msg_type"] in ("stream", "error", "display_data",
                                                                  "execute_result"):
                outputs.append(msg)
            idle = idle or (msg["msg_type"] == "status"
                            and msg["content"]["execution_state"] == "idle")
            if msg["channel"] == "shell" and msg["msg_type"] == "execute_reply":
                reply = msg["content"]
        return reply, outputs

    def close(self):
        self.ws.close()


def test_lab_runs_a_notebook_in_the_project_kernel(lab):
    session = requests.post(f"{lab['base']}/api/sessions", headers=lab["headers"], timeout=60,
                            json={"path": NOTEBOOK, "type": "notebook", "name": "",
                                  "kernel": {"name": "fast-decoding"}}).json()
    kernel = Kernel(lab, session["kernel"]["id"])
    try:
        reply, outputs = kernel.run("import os, sys; print(sys.executable); print(os.getcwd())")
        assert reply["status"] == "ok"
        executable, cwd = "".join(m["content"]["text"] for m in outputs).split()
        assert os.path.samefile(executable, sys.executable)
        assert os.path.samefile(cwd, REPO / "notebooks")  # opened where the notebook lives
        nb = nbformat.read(REPO / NOTEBOOK, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            reply, outputs = kernel.run(cell.source)
            errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
            assert reply["status"] == "ok", (cell.source[:200], errors)
            if "parameters" in cell.metadata.get("tags", []):
                assert kernel.run('preset = "smoke"')[0]["status"] == "ok"
    finally:
        kernel.close()
        requests.delete(f"{lab['base']}/api/sessions/{session['id']}", headers=lab["headers"],
                        timeout=30)
    record = json.loads((lab["tmp"] / "run" / "outputs" / "01_naive_generation.json").read_text())
    assert record["preset"] == "smoke"
    assert any(entry["kind"] == "figure" for entry in record["files"])
