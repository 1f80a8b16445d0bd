# Sourced by the cpp rows' setup.sh: makes .venv in the current directory, installing Debian's
# python3-venv first when the interpreter cannot make one (a clean CI image as root).
ensure_venv() {
    [ -x .venv/bin/python ] && return 0
    if ! python3 -m venv .venv 2>/dev/null; then
        rm -rf .venv
        apt-get install -y -qq python3-venv
        python3 -m venv .venv
    fi
}
