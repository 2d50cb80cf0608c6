#!/usr/bin/env python3
"""Write tests/data/toolkit/CASE/expected.json: the argv and the environment
that the SageMaker training toolkit 4.5.0, run as the PyTorch framework
container runs it (sagemaker_pytorch_container/training.py), gives each
case's job.  Not run by the tests (they read the files it wrote); run it by
hand when a case is added:

  tests/data/toolkit/generate.py TOOLKIT_SRC PYTORCH_SRC

TOOLKIT_SRC is the src/ directory of aws/sagemaker-training-toolkit at tag
v4.5.0, PYTORCH_SRC that of aws/sagemaker-pytorch-training-toolkit.  The
toolkit's own code reads the case's files (SAGEMAKER_BASE_DIR is the case
directory) and builds the environment and the command; only what needs a
machine it does not have is replaced: paramiko, psutil, gethostname and
retrying (not called), nvidia-smi and neuron-ls (the case's "gpus" and
"neurons"), `which smddpmprun` (the case's "installed"), torch (its
__version__ is the case's "torch").  Each case directory holds
input/config/*.json and case.json:
  {"what": "...", "gpus": N, "neurons": N, "torch": "2.0.1" | null,
   "installed": ["smddprun", ...], "env": {"AWS_DEFAULT_REGION": ...}}
(torch is always installed in the PyTorch container: every case names a version.)
"""
import json
import os
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def stub(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


def one_case(case_dir, tk_src, pt_src):
    case = json.load(open(os.path.join(case_dir, "case.json")))
    for k, v in case.get("env", {}).items():
        os.environ[k] = v
    os.environ["SAGEMAKER_BASE_DIR"] = case_dir
    sys.path[:0] = [tk_src, pt_src]
    stub("paramiko")
    stub("psutil")
    stub("inotify_simple")
    # getfile(gethostname) is the LD_PRELOAD path the toolkit forwards.
    stub("gethostname", __file__="GETHOSTNAME_SO")
    stub("retrying", retry=lambda *a, **k: (lambda f: f))
    if case.get("torch"):
        stub("torch", __version__=case["torch"])
    else:
        sys.modules["torch"] = None  # import torch raises ImportError
    from sagemaker_training import environment, runner

    environment.num_gpus = lambda: case.get("gpus", 0)
    environment.num_neurons = lambda: case.get("neurons", 0)
    environment.validate_smddpmprun = lambda: "smddpmprun" in case.get("installed", [])
    from sagemaker_pytorch_container import training

    before = dict(os.environ)
    env = environment.Environment()
    training._set_nccl_environment(env.network_interface_name)
    training._set_distributed_environment(env)
    afp = env.additional_framework_parameters
    kind = runner.ProcessRunnerType
    if env.current_instance_group in env.distribution_instance_groups:
        if afp.get(training.LAUNCH_MPI_ENV_NAME):
            kind = runner.MPIRunnerType
        elif afp.get(training.LAUNCH_PYTORCH_DDP_ENV_NAME):
            kind = runner.SMDataParallelRunnerType
        elif afp.get(training.LAUNCH_TORCH_DISTRIBUTED_ENV_NAME):
            kind = runner.TorchDistributedRunnerType
        elif afp.get(training.LAUNCH_SMDATAPARALLEL_ENV_NAME):
            kind = runner.SMDataParallelRunnerType
    training._set_torch_version_environment()
    env_vars = env.to_env_vars()
    env_vars["PYTHONPATH"] = ":".join([environment.code_dir] + sys.path)  # write_env_vars
    run = runner.get(kind, env.user_entry_point, env.to_cmd_args(), env_vars)
    argv = None
    if type(run).__name__ != "WorkerRunner":
        argv = run._create_command()
    if type(run).__name__ == "SMDataParallelRunner":
        from sagemaker_training import process

        run._setup = lambda: None  # starts sshd and waits for the workers
        argv += process.ProcessRunner._create_command(run)  # what its run() appends
    rank_env = dict(env_vars)
    for k, v in os.environ.items():
        if before.get(k) != v and k != "PYTHONPATH":
            rank_env[k] = v
    for i, word in enumerate(argv or []):
        if word == "-x" and "=" in argv[i + 1]:
            name, value = argv[i + 1].split("=", 1)
            rank_env[name] = value
    return {"runner": type(run).__name__, "argv": argv, "env": rank_env}


def main():
    if len(sys.argv) == 4:  # one case, in a process of its own
        json.dump(one_case(sys.argv[3], sys.argv[1], sys.argv[2]), sys.stdout)
        return
    tk_src, pt_src = (os.path.abspath(a) for a in sys.argv[1:3])
    for name in sorted(os.listdir(HERE)):
        case_dir = os.path.join(HERE, name)
        if not os.path.isfile(os.path.join(case_dir, "case.json")):
            continue
        out = subprocess.run([sys.executable, __file__, tk_src, pt_src, case_dir],
                             check=True, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}).stdout
        got = json.loads(out.replace(case_dir, "ROOT").replace(sys.executable, "PYTHON"))
        case = json.load(open(os.path.join(case_dir, "case.json")))
        expected = {"what": case["what"],
                    "source": "sagemaker-training-toolkit v4.5.0 and "
                              "sagemaker_pytorch_container/training.py, run by generate.py",
                    **got}
        with open(os.path.join(case_dir, "expected.json"), "w") as f:
            json.dump(expected, f, indent=1, sort_keys=True)
            f.write("\n")
        print(name, got["runner"])


main()
