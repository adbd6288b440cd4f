#!/usr/bin/env python3
"""Writes a one-layer image as a docker-archive tarball (what `ctr images import` and `docker load`
read) from a directory: no registry, no daemon. File owners are kept numeric as they are on disk
(a database refuses a data directory of the wrong owner).

    image.py ROOTFS NAME:TAG OUT.tar [--entrypoint JSON] [--user UID] [--env K=V ...]
"""
import argparse, hashlib, io, json, os, tarfile

def layer(rootfs):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for top, dirs, files in os.walk(rootfs):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(top, name)
                info = tar.gettarinfo(path, arcname=os.path.relpath(path, rootfs))
                info.uname = info.gname = ""
                info.mtime = 0
                if info.isreg():
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
    return out.getvalue()

def main():
    p = argparse.ArgumentParser()
    p.add_argument("rootfs"); p.add_argument("name"); p.add_argument("out")
    p.add_argument("--entrypoint", default=None)
    p.add_argument("--cmd", default=None)
    p.add_argument("--user", default="")
    p.add_argument("--env", action="append", default=[])
    a = p.parse_args()
    data = layer(a.rootfs)
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    env = [e for e in env if e.split("=")[0] not in {v.split("=")[0] for v in a.env}] + a.env
    diff_id = "sha256:" + hashlib.sha256(data).hexdigest()
    config = {
        "architecture": "amd64", "os": "linux",
        "config": {
            "Env": env,
            "Entrypoint": json.loads(a.entrypoint) if a.entrypoint else None,
            "Cmd": json.loads(a.cmd) if a.cmd else None,
            "User": a.user,
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "scripts/node/image.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [a.name], "Layers": ["layer.tar"]}]).encode()
    tmp = a.out + ".tmp"
    with tarfile.open(tmp, mode="w") as tar:
        for name, content in [("layer.tar", data), (config_name, config_bytes), ("manifest.json", manifest)]:
            info = tarfile.TarInfo(name); info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    os.replace(tmp, a.out)

main()
