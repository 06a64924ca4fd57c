"""A small Hub-protocol server on 127.0.0.1 for end-to-end publishing tests.

It speaks the parts of the Hugging Face Hub HTTP API that ``huggingface_hub`` (create_repo,
upload_folder with the git-LFS batch API) and ``datasets`` (load_dataset through
HfFileSystem) use: repo creation, preupload, LFS batch + object upload, NDJSON commits,
repo info, tree listing, paths-info and file resolution with HEAD and Range.
State lives in memory; nothing leaves the machine. Use with ``HF_HUB_DISABLE_XET=1``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

_TYPES = {"datasets": "dataset", "spaces": "space", "models": "model"}
_PREFIX = {"dataset": "datasets/", "space": "spaces/", "model": ""}


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, repo_type: str, repo_id: str, private: bool):
        self.type, self.id, self.private = repo_type, repo_id, private
        self.files: dict[str, bytes] = {}
        self.lfs: dict[str, str] = {}  # path -> sha256 of LFS files
        self.sha = hashlib.sha1(f"{repo_type}/{repo_id}/init".encode()).hexdigest()
        self.history = [self.sha]


class HubState:
    def __init__(self):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.objects: dict[str, bytes] = {}
        self.lock = threading.Lock()
        self.requests: list[str] = []


class Handler(BaseHTTPRequestHandler):
    server_version = "hf-real3d-test-hub/1.0"
    protocol_version = "HTTP/1.1"

    @property
    def state(self) -> HubState:
        return self.server.state  # type: ignore[attr-defined]

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]  # type: ignore[index]
        return f"http://{host}:{port}"

    def log_message(self, fmt, *args):  # keep test output clean
        pass

    # --- helpers -------------------------------------------------------------------
    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            return self.rfile.read(n)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return b""

    def _send(self, code: int, body: bytes | dict | list = b"", headers: dict | None = None,
              content_type: str = "application/json", head: bool = False) -> None:
        data = json.dumps(body).encode() if isinstance(body, dict | list) else body
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head and self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, code: int, msg: str, error_code: str = "") -> None:
        h = {"X-Error-Message": msg}
        if error_code:
            h["X-Error-Code"] = error_code
        self._send(code, {"error": msg}, headers=h)

    def _repo(self, rtype: str, repo_id: str, rev: str | None = None) -> Repo | None:
        repo = self.state.repos.get((rtype, repo_id))
        if repo is None:
            self._error(404, f"Repository {repo_id} not found", "RepoNotFound")
            return None
        if rev not in (None, "main", repo.sha) and rev not in repo.history:
            self._error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
            return None
        return repo

    def _entry(self, repo: Repo, path: str) -> dict | None:
        if path in repo.files:
            data = repo.files[path]
            e = {"type": "file", "oid": _git_blob_sha(data), "size": len(data), "path": path}
            if path in repo.lfs:
                e["lfs"] = {"oid": repo.lfs[path], "size": len(data), "pointerSize": 134}
            return e
        prefix = path.rstrip("/") + "/"
        if path in ("", ".") or any(p.startswith(prefix) for p in repo.files):
            return {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(),
                    "size": 0, "path": path.strip("/")}
        return None

    def _tree(self, repo: Repo, path: str, recursive: bool) -> list[dict]:
        path = path.strip("/")
        prefix = path + "/" if path else ""
        out, dirs = [], set()
        for p in sorted(repo.files):
            if not p.startswith(prefix):
                continue
            rest = p[len(prefix):]
            parts = rest.split("/")
            for i in range(1, len(parts)):
                d = prefix + "/".join(parts[:i])
                if (recursive or i == 1) and d not in dirs:
                    dirs.add(d)
                    out.append(self._entry(repo, d))
            if recursive or len(parts) == 1:
                out.append(self._entry(repo, p))
        return out

    def _info(self, repo: Repo) -> dict:
        return {"_id": repo.sha[:24], "id": repo.id, "sha": repo.sha, "private": repo.private,
                "author": repo.id.split("/")[0], "disabled": False, "gated": False,
                "lastModified": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                "downloads": 0, "likes": 0, "tags": [],
                "siblings": [{"rfilename": p, "size": len(d)} for p, d in repo.files.items()],
                "sdk": "gradio" if repo.type == "space" else None}

    # --- verbs ---------------------------------------------------------------------
    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def _dispatch(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        query = urllib.parse.parse_qs(url.query)
        self.state.requests.append(f"{method} {path}")
        with self.state.lock:
            try:
                self._route(method, path, query)
            except Exception as err:  # a bug here must show in the test, not hang it
                self._error(500, f"test hub error: {err!r}")

    def _route(self, method: str, path: str, query: dict) -> None:
        if method == "POST" and path == "/api/repos/create":
            body = json.loads(self._body() or b"{}")
            rtype = body.get("type") or "model"
            repo_id = f"{body['organization']}/{body['name']}" if body.get("organization") \
                else body["name"]
            url = f"{self.base}/{_PREFIX[rtype]}{repo_id}"
            if (rtype, repo_id) in self.state.repos:
                return self._send(409, {"error": "You already created this repo", "url": url})
            self.state.repos[(rtype, repo_id)] = Repo(rtype, repo_id, bool(body.get("private")))
            return self._send(200, {"url": url, "name": repo_id})
        if method == "POST" and path == "/api/validate-yaml":
            content = json.loads(self._body()).get("content", "")
            m = re.match(r"^---\n(.*?)\n---", content, flags=re.S)
            try:
                meta = yaml.safe_load(m.group(1)) if m else {}
                if not isinstance(meta, dict):
                    raise ValueError("card metadata is not a mapping")
            except Exception as err:
                return self._send(400, {"errors": [{"message": str(err)}], "warnings": []})
            return self._send(200, {"errors": [], "warnings": []})
        if method == "PUT" and path.startswith("/lfs-upload/"):
            oid = path.rsplit("/", 1)[1]
            data = self._body()
            if hashlib.sha256(data).hexdigest() != oid:
                return self._error(400, "sha256 mismatch")
            self.state.objects[oid] = data
            return self._send(200, b"")
        m = re.fullmatch(r"/(?:(datasets|spaces)/)?(.+?)\.git/info/lfs/objects/batch", path)
        if method == "POST" and m:
            body = json.loads(self._body())
            objs = []
            for o in body.get("objects", []):
                e = {"oid": o["oid"], "size": o["size"], "authenticated": True}
                if o["oid"] not in self.state.objects:
                    e["actions"] = {"upload": {"href": f"{self.base}/lfs-upload/{o['oid']}",
                                               "header": {}}}
                objs.append(e)
            return self._send(200, {"transfer": "basic", "objects": objs, "hash_algo": "sha256"},
                              content_type="application/vnd.git-lfs+json")
        m = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)(?:/(.*))?", path)
        if m:
            rtype, repo_id, rest = _TYPES[m.group(1)], m.group(2), m.group(3) or ""
            return self._api(method, rtype, repo_id, rest, query)
        m = re.fullmatch(r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m and method in ("GET", "HEAD"):
            rtype = _TYPES.get(m.group(1) or "models", "model")
            repo = self._repo(rtype, m.group(2), m.group(3))
            if repo is None:
                return None
            fpath = m.group(4)
            if fpath not in repo.files:
                return self._error(404, f"Entry not found: {fpath}", "EntryNotFound")
            data = repo.files[fpath]
            etag = repo.lfs.get(fpath) or _git_blob_sha(data)
            headers = {"X-Repo-Commit": repo.sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
            if fpath in repo.lfs:
                headers.update({"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data))})
            rng = self.headers.get("Range")
            if rng and method == "GET":
                a, b = rng.replace("bytes=", "").split("-")
                start = int(a) if a else len(data) - int(b)
                end = int(b) if a and b else len(data) - 1
                end = min(end, len(data) - 1)
                headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                return self._send(206, data[start:end + 1], headers,
                                  "application/octet-stream")
            return self._send(200, data, headers, "application/octet-stream",
                              head=method == "HEAD")
        return self._error(404, f"no route for {method} {path}")

    def _api(self, method: str, rtype: str, repo_id: str, rest: str, query: dict) -> None:
        if rest == "" or rest.startswith("revision/"):
            repo = self._repo(rtype, repo_id, rest[len("revision/"):] or None)
            return None if repo is None else self._send(200, self._info(repo))
        m = re.fullmatch(r"(preupload|commit|tree|paths-info)/([^/]+)(?:/(.*))?", rest)
        if not m:
            return self._error(404, f"no api route {rest}")
        verb, rev, sub = m.group(1), m.group(2), m.group(3) or ""
        repo = self._repo(rtype, repo_id, None if verb in ("preupload", "commit") else rev)
        if repo is None:
            return None
        if verb == "preupload":
            body = json.loads(self._body())
            files = [{"path": f["path"], "shouldIgnore": False, "oid": None,
                      "uploadMode": "lfs" if f["path"].endswith((".parquet", ".png", ".arrow"))
                      or f.get("size", 0) > 1_000_000 else "regular"}
                     for f in body.get("files", [])]
            return self._send(200, {"files": files, "commitOid": repo.sha})
        if verb == "commit":
            summary = ""
            for line in self._body().splitlines():
                if not line.strip():
                    continue
                item = json.loads(line)
                key, val = item["key"], item["value"]
                if key == "header":
                    summary = val.get("summary", "")
                elif key == "file":
                    repo.files[val["path"]] = base64.b64decode(val["content"])
                    repo.lfs.pop(val["path"], None)
                elif key == "lfsFile":
                    if val["oid"] not in self.state.objects:
                        return self._error(400, f"LFS object {val['oid']} was not uploaded")
                    repo.files[val["path"]] = self.state.objects[val["oid"]]
                    repo.lfs[val["path"]] = val["oid"]
                elif key in ("deletedFile", "deletedFolder"):
                    for p in list(repo.files):
                        if p == val["path"] or p.startswith(val["path"].rstrip("/") + "/"):
                            del repo.files[p]
                            repo.lfs.pop(p, None)
            repo.sha = hashlib.sha1(f"{repo.sha}{summary}{time.time()}".encode()).hexdigest()
            repo.history.append(repo.sha)
            url = f"{self.base}/{_PREFIX[rtype]}{repo_id}/commit/{repo.sha}"
            return self._send(200, {"commitUrl": url, "commitOid": repo.sha, "success": True,
                                    "pullRequestUrl": None})
        if verb == "tree":
            recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
            entry = self._entry(repo, sub.strip("/")) if sub.strip("/") else None
            if sub.strip("/") and entry is None:
                return self._error(404, f"Entry not found: {sub}", "EntryNotFound")
            if entry and entry["type"] == "file":
                return self._send(200, [entry])
            return self._send(200, self._tree(repo, sub, recursive))
        # paths-info
        raw = self._body()
        ctype = self.headers.get("Content-Type", "")
        if "json" in ctype:
            paths = json.loads(raw).get("paths", [])
        else:
            form = urllib.parse.parse_qs(raw.decode())
            paths = form.get("paths", [])
        out = [e for p in paths if (e := self._entry(repo, p.strip("/"))) is not None]
        return self._send(200, out)


class HubServer:
    """Context manager: ``with HubServer() as hub: os.environ["HF_ENDPOINT"] = hub.url``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.state = HubState()  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def state(self) -> HubState:
        return self.httpd.state  # type: ignore[attr-defined]

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
