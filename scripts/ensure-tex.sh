#!/usr/bin/env bash
# The study report's LaTeX is compiled by a test (tests/report/): install Debian's TeX Live
# (base and recommended: booktabs and the fonts the report uses) where no engine is found.
# Where apt cannot install (no root, no registry), say so and go on: that test is then
# skipped, saying why.
set -uo pipefail
for engine in pdflatex lualatex xelatex; do
  command -v "$engine" >/dev/null 2>&1 && exit 0
done
echo "Installing Debian's TeX Live (texlive-latex-base, texlive-latex-recommended) to compile the study report's LaTeX"
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get -o DPkg::Lock::Timeout=600 update -q && apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends texlive-latex-base texlive-latex-recommended; }; then
  echo "ensure-tex: could not install TeX Live; the LaTeX compile test will be skipped" >&2
fi
exit 0
