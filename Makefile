# Set-up and entry points. `make demo` and `make test` are all a new user needs:
# both create .venv, install CPU torch first (so nothing pulls a CUDA build),
# install the package with every extra and the exact pins of constraints.txt, and
# install the Debian libraries open3d needs when they are missing. (A user who only
# scores needs neither: `pip install hf-real3d` is the light install, without torch.)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
EXTRAS := train,scenes,llm,app,scanqa,docs,dev
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
DEB_PACKAGES := libusb-1.0-0 libvulkan1 mesa-vulkan-drivers libgomp1 openjdk-17-jre-headless chromium

.PHONY: install sysdeps demo test bench lint docs clean

install: $(STAMP) sysdeps

$(STAMP): setup.cfg pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# CPU torch first, at the version constraints.txt pins
	$(PIP) install -q -c constraints.txt torch
	# every extra: [train] torch/trl/peft/accelerate, [scenes] open3d, [llm], [app], [scanqa],
	# [docs], [dev] (the base install alone scores without torch or open3d)
	$(PIP) install -q -c constraints.txt -e '.[$(EXTRAS)]'
	# lmms-eval (the [lmms] extra) without its full dependency list, which pulls torchvision
	# (a CUDA torch) and wandb: its task manager and evaluator need only these
	$(PIP) install -q -c constraints.txt --no-deps lmms-eval
	$(PIP) install -q -c constraints.txt loguru pytz tenacity sacrebleu
	touch $(STAMP)

# open3d-cpu needs libusb at import time; its offscreen renderer needs Vulkan (mesa);
# Real-ScanQA's captioning metrics (pycocoevalcap) run Java; the explorer's browser tests
# drive Debian's chromium (Playwright's own browser download cannot be reached).
sysdeps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null \
	    || { echo "could not install$$missing: install them with apt-get as root"; exit 1; }; \
	fi

demo: install
	$(OFFLINE) $(VENV)/bin/hf-real3d demo --out outputs/demo

# RUN_SLOW=1: the end-to-end tests marked `slow` run too (plain `pytest` skips them); on
# every core (pytest-xdist, one test file per worker, so a file's fixtures are built once);
# the 40 slowest tests are printed, so a CI log shows where the time goes
test: install
	$(OFFLINE) RUN_SLOW=1 $(PY) -m pytest -q -n auto --dist loadfile --durations=40

bench: install
	$(OFFLINE) $(PY) bench/run_all.py

# the documentation site: strict, so a broken link or a missing API reference fails the build
docs: install
	$(OFFLINE) $(VENV)/bin/mkdocs build --strict --site-dir site

lint: install
	$(VENV)/bin/ruff check hf_real3d tests bench metrics recipes dataset_scripts

clean:
	rm -rf $(VENV) outputs .pytest_cache site
