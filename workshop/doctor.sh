#!/bin/sh
# make workshop-doctor: is everything the workshop builds with on this laptop? One line per
# missing tool, with the command that installs it on this system (Linux and its package
# manager, macOS, WSL2; amd64 or arm64), in the reader's language.
#
# A POSIX shell script and not a Rust program: it must answer on the laptop that cannot build
# one yet (no C compiler, no Rust, a rustc too old for edition 2024). It runs nothing but
# shell built-ins, `uname` and the tools it checks, so that a test can run it with a PATH of
# fake tools (workshop/tests/doctor.rs). Its sentences are those of workshop/kit/src/messages/doctor.rs
# (DOCTOR_*), which that test compares with what it prints.

set -f

# The oldest Rust the workshop builds with: Cargo.toml's rust-version (edition 2024 itself
# needs 1.85).
NEEDED_MINOR=89
KUBECTL_VERSION=v1.33.0

# The language, as the Rust tools choose it: `--lang ja|en` first (make's WORKSHOP_LANG=ja),
# else the first of LC_ALL, LC_MESSAGES, LANG that is set.
lang=en
for value in "${LC_ALL:-}" "${LC_MESSAGES:-}" "${LANG:-}"; do
    if [ -n "$value" ]; then
        case $value in ja* | JA* | Ja*) lang=ja ;; esac
        break
    fi
done
case ${1:-} in
--lang=*) lang=${1#--lang=} && shift ;;
--lang) lang=${2:-$lang} && shift 2 ;;
esac
case $lang in ja* | JA* | Ja*) lang=ja ;; *) lang=en ;; esac

# msg KEY: the template of a message in the chosen language (workshop/kit/src/messages/doctor.rs).
msg() {
    case $lang:$1 in
    en:OK) echo 'workshop-doctor: ✓ {tools}: everything the workshop builds with is here' ;;
    ja:OK) echo 'workshop-doctor: ✓ {tools}: ワークショップのビルドに必要なものはそろっています' ;;
    en:MISSING) echo '✗ {tool} is missing; to install it: {command}' ;;
    ja:MISSING) echo '✗ {tool} が見つかりません。インストールするには: {command}' ;;
    en:CC) echo 'cc (a C compiler: ring and jemalloc compile C code)' ;;
    ja:CC) echo 'cc (C コンパイラー。ring と jemalloc が C のコードをコンパイルします)' ;;
    en:RUST_OLD) echo '✗ rustc {version} is too old: this project is Rust edition 2024 and needs {needed} or newer; to update: {command}' ;;
    ja:RUST_OLD) echo '✗ rustc {version} は古すぎます。このプロジェクトは Rust edition 2024 で、{needed} 以降が必要です。更新するには: {command}' ;;
    en:PACKAGE) echo "the package {package} of your distribution's package manager" ;;
    ja:PACKAGE) echo 'ディストリビューションのパッケージマネージャーで {package} パッケージ' ;;
    en:SUMMARY) echo 'workshop-doctor: {count} missing (above); install, then run make workshop-doctor again' ;;
    ja:SUMMARY) echo 'workshop-doctor: 足りないものが {count} 件あります (上記)。インストールしてから、もう一度 make workshop-doctor を実行してください' ;;
    en:KUBECTL_UNTESTED) echo "! kubectl {version} works, but the guide's outputs were tested with kubectl 1.32 to 1.36: some lines may read otherwise" ;;
    ja:KUBECTL_UNTESTED) echo '! kubectl {version} は使えますが、ガイドの出力は kubectl 1.32〜1.36 で確かめたものです。表示が少し違う行があるかもしれません' ;;
    en:WSL_MNT) echo "✗ this clone is on Windows' disk ({dir}): under WSL a build there is many times slower; clone it into your Linux home: cd ~ && git clone <the repository's URL>" ;;
    ja:WSL_MNT) echo '✗ このクローンは Windows 側のディスク ({dir}) にあります。WSL ではそこでのビルドが何倍も遅くなります。Linux のホームにクローンしてください: cd ~ && git clone <リポジトリの URL>' ;;
    en:DISK) echo "✗ only {free} of disk is free here; the day's build needs {needed}: free some space (cargo clean in old Rust projects is a good start)" ;;
    ja:DISK) echo '✗ ここのディスクの空きは {free} しかありません。当日のビルドには {needed} 必要です。空きを作ってください (古い Rust プロジェクトでの cargo clean が手始めです)' ;;
    en:DISK_MORE) echo "✗ only {free} of disk is free here; the day's build needs {needed} more ({built} of it is built already): free some space (cargo clean in old Rust projects is a good start)" ;;
    ja:DISK_MORE) echo '✗ ここのディスクの空きは {free} しかありません。当日のビルドには、ビルド済みの {built} のほかにあと {needed} 必要です。空きを作ってください (古い Rust プロジェクトでの cargo clean が手始めです)' ;;
    en:PLUGIN_PATH) echo '✗ make workshop-prepare installs kubectl math into {dir}, which is not on your PATH, so kubectl would not find it; run: export PATH="{dir}:$PATH" (and add that line to ~/.bashrc)' ;;
    ja:PLUGIN_PATH) echo '✗ make workshop-prepare は kubectl math を {dir} にインストールしますが、そのディレクトリが PATH に入っていないため、kubectl から見つかりません。実行してください: export PATH="{dir}:$PATH" (~/.bashrc にも同じ行を書き足します)' ;;
    en:CARGO_PATH) echo '✗ Rust is installed in ~/.cargo/bin, but that folder is not on your PATH; run: . "$HOME/.cargo/env" (or open a new terminal)' ;;
    ja:CARGO_PATH) echo '✗ Rust は ~/.cargo/bin にインストールされていますが、そのディレクトリが PATH に入っていません。実行してください: . "$HOME/.cargo/env" (または新しいターミナルを開きます)' ;;
    en:PREPARED) echo 'workshop-prepare: done in {minutes} min {seconds} s, {total} of disk (target/ {target}, crates in ~/.cargo {crates}); the workshop now runs without network' ;;
    ja:PREPARED) echo 'workshop-prepare: 完了しました ({minutes} 分 {seconds} 秒、ディスク {total}: target/ が {target}、~/.cargo のクレートが {crates})。これでワークショップはネットワークなしで動きます' ;;
    esac
}

# fill TEMPLATE NAME VALUE ...: the template with each {NAME} replaced by its VALUE.
fill() {
    text=$1
    shift
    while [ $# -ge 2 ]; do
        key="{$1}"
        while :; do
            case $text in
            *"$key"*) text="${text%%"$key"*}$2${text#*"$key"}" ;;
            *) break ;;
            esac
        done
        shift 2
    done
    printf '%s\n' "$text"
}

# size KB: a size as du -sh would round it, in MB below a GB.
size() {
    if [ "$1" -ge 1048576 ]; then
        tenths=$((($1 * 10 + 524288) / 1048576))
        echo "$((tenths / 10)).$((tenths % 10)) GB"
    else
        echo "$((($1 + 512) / 1024)) MB"
    fi
}

# kilobytes DIR: what DIR holds on disk, 0 when it does not exist.
kilobytes() {
    if [ -d "$1" ]; then
        set -- $(du -sk "$1" 2>/dev/null)
        echo "${1:-0}"
    else
        echo 0
    fi
}

# --footprint STARTED [NOW]: the last line of make workshop-prepare: how long it took since
# STARTED (seconds since 1970) and what the build and the crates take on disk.
if [ "${1:-}" = --footprint ]; then
    now=${3:-$(date +%s)}
    elapsed=$((now - ${2:-$now}))
    target=$(kilobytes "${CARGO_TARGET_DIR:-target}")
    cargo_home=${CARGO_HOME:-$HOME/.cargo}
    crates=$(($(kilobytes "$cargo_home/registry") + $(kilobytes "$cargo_home/git")))
    fill "$(msg PREPARED)" minutes $((elapsed / 60)) seconds $((elapsed % 60)) \
        total "$(size $((target + crates)))" target "$(size "$target")" crates "$(size "$crates")"
    exit 0
fi

have() {
    command -v "$1" >/dev/null 2>&1
}

# The system: linux, wsl (Linux under Windows) or macos; and the CPU as kubectl's downloads
# name it.
system=linux
case $(uname -s 2>/dev/null) in
Darwin) system=macos ;;
*)
    case $(uname -r 2>/dev/null) in
    *[Mm]icrosoft*) system=wsl ;;
    esac
    ;;
esac
case $(uname -m 2>/dev/null) in
arm64 | aarch64) arch=arm64 ;;
*) arch=amd64 ;;
esac
case $system in macos) os=darwin ;; *) os=linux ;; esac

# The command that installs the distribution package $1 (Linux, WSL).
package() {
    if have apt-get; then
        echo "sudo apt-get install -y $1"
    elif have dnf; then
        echo "sudo dnf install -y $1"
    elif have pacman; then
        echo "sudo pacman -S --needed $1"
    elif have zypper; then
        echo "sudo zypper install -y $1"
    elif have apk; then
        echo "sudo apk add $1"
    else
        fill "$(msg PACKAGE)" package "$1"
    fi
}

# The C compiler's package: Debian's and Alpine's bring make and libc's headers with it.
cc_package() {
    if have apt-get; then
        echo build-essential
    elif have pacman; then
        echo base-devel
    elif have apk; then
        echo build-base
    else
        echo gcc
    fi
}

rustup_install="curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh"

install_command() {
    case $system:$1 in
    *:rustc | *:cargo) echo "$rustup_install" ;;
    macos:kubectl)
        if have brew; then
            echo "brew install kubectl"
        else
            echo "curl -LO https://dl.k8s.io/release/$KUBECTL_VERSION/bin/darwin/$arch/kubectl && chmod +x kubectl && sudo mv kubectl /usr/local/bin/"
        fi
        ;;
    *:kubectl) echo "curl -LO https://dl.k8s.io/release/$KUBECTL_VERSION/bin/linux/$arch/kubectl && sudo install kubectl /usr/local/bin/" ;;
    macos:*) echo "xcode-select --install" ;;
    *:cc) package "$(cc_package)" ;;
    *) package "$1" ;;
    esac
}

missing=0
found=""

# found_tool TEXT: a tool that answered, for the ✓ line.
found_tool() {
    if [ -z "$found" ]; then found=$1; else found="$found, $1"; fi
}

missing_tool() {
    missing=$((missing + 1))
    fill "$(msg MISSING)" tool "$1" command "$(install_command "$2")"
}

# Where the build will happen: the clone (the doctor's own folder's parent; DOCTOR_CLONE for
# the tests, which cannot make a /mnt/c).
script_dir=.
case $0 in */*) script_dir=${0%/*} ;; esac
clone=${DOCTOR_CLONE:-$(cd "$script_dir/.." 2>/dev/null && pwd)}

# Under WSL, /mnt/c is Windows' disk reached through a network file system: cargo's many
# small files make a build there many times slower than in the Linux home.
if [ "$system" = wsl ]; then
    case $clone in
    /mnt/[a-z] | /mnt/[a-z]/*)
        missing=$((missing + 1))
        fill "$(msg WSL_MNT)" dir "$clone"
        ;;
    esac
fi

# The day's build and crates take 2.3 GB (make workshop-prepare, measured 2026-11-28); 4 GB leaves
# room for the second build of a catch-up. What make workshop-prepare already built (the
# workshop profile's target/, the crates cargo fetched) counts: after it, the doctor must not
# ask for the space the build rightly took. No df (a minimal container): not checked.
NEEDED_KIB=4194304
cargo_home=${CARGO_HOME:-$HOME/.cargo}
built=$(($(kilobytes "${CARGO_TARGET_DIR:-$clone/target}/workshop") + $(kilobytes "$cargo_home/registry")))
still=$((NEEDED_KIB - built))
[ "$still" -ge 524288 ] || still=524288
free=$(df -Pk "$clone" 2>/dev/null | {
    read -r _header
    read -r _fs _blocks _used available _rest
    echo "${available:-}"
})
case $free in
'' | *[!0-9]*) ;;
*)
    if [ "$free" -lt "$still" ]; then
        missing=$((missing + 1))
        if [ "$built" -gt 0 ]; then
            fill "$(msg DISK_MORE)" free "$(size "$free")" needed "$(size "$still")" built "$(size "$built")"
        else
            fill "$(msg DISK)" free "$(size "$free")" needed "4 GB"
        fi
    fi
    ;;
esac

# rustup installs into ~/.cargo/bin and adds it to the PATH of shells started afterwards: a
# terminal opened before the install finds no cargo, and installing Rust again does not help.
rust_off_path=no
case ":$PATH:" in
*":$HOME/.cargo/bin:"* | *":$HOME/.cargo/bin/:"*) ;;
*)
    if [ -x "$HOME/.cargo/bin/cargo" ] && ! have cargo; then
        rust_off_path=yes
        missing=$((missing + 1))
        msg CARGO_PATH
    fi
    ;;
esac

# make workshop-prepare installs kubectl math (cargo install) into $CARGO_HOME/bin, which rustup
# puts on the PATH; after Rust's standalone installer (the organiser's offline route) nothing
# does, and kubectl would not find the plugin at stage 2.
case ":$PATH:" in
*":$cargo_home/bin:"* | *":$cargo_home/bin/:"*) ;;
*)
    if [ "$rust_off_path" = no ] && have cargo; then
        missing=$((missing + 1))
        fill "$(msg PLUGIN_PATH)" dir "$cargo_home/bin"
    fi
    ;;
esac

# Rust: present, and new enough for edition 2024 and the crates' rust-version.
if [ "$rust_off_path" = yes ]; then
    :
elif rust=$(rustc --version 2>/dev/null); then
    set -- $rust
    version=$2
    old_ifs=$IFS
    IFS=.
    set -- $version
    IFS=$old_ifs
    minor=${2%%[!0-9]*}
    if [ "$1" = 1 ] && [ "${minor:-0}" -lt "$NEEDED_MINOR" ]; then
        missing=$((missing + 1))
        if [ -x "$HOME/.cargo/bin/rustc" ] && [ "$(command -v rustc)" != "$HOME/.cargo/bin/rustc" ]; then
            # rustup has just installed a new Rust, but this terminal still finds the
            # distribution's older one first: installing again would not help.
            msg CARGO_PATH
        else
            if have rustup; then update="rustup update"; else update=$rustup_install; fi
            fill "$(msg RUST_OLD)" version "$version" needed "1.$NEEDED_MINOR" command "$update"
        fi
    else
        found_tool "rustc $version"
    fi
else
    missing_tool rustc rustc
fi

if [ "$rust_off_path" = yes ]; then
    :
elif cargo --version >/dev/null 2>&1; then found_tool cargo; else missing_tool cargo cargo; fi

# A tool is there when it answers its version: macOS has shims of cc, make and git that only
# offer to install the Command Line Tools.
if cc --version >/dev/null 2>&1; then found_tool cc; else missing_tool "$(msg CC)" cc; fi
if make --version >/dev/null 2>&1; then found_tool make; else missing_tool make make; fi
if git --version >/dev/null 2>&1; then found_tool git; else missing_tool git git; fi

if kubectl_said=$(kubectl version --client 2>/dev/null); then
    set -- $kubectl_said
    found_tool "kubectl $3"
    # The guide's outputs hold for kubectl 1.32-1.36 (1.34 added "from <ns> namespace" to
    # deletions, which the guide's test reads alike): outside that range, a warning, not a miss.
    kubectl_version=$3
    old_ifs=$IFS
    IFS=.
    set -- ${kubectl_version#v}
    IFS=$old_ifs
    kubectl_minor=${2%%[!0-9]*}
    if [ "$1" != 1 ] || [ "${kubectl_minor:-0}" -lt 32 ] || [ "${kubectl_minor:-0}" -gt 36 ]; then
        fill "$(msg KUBECTL_UNTESTED)" version "$kubectl_version"
    fi
else
    missing_tool kubectl kubectl
fi

if [ "$missing" -gt 0 ]; then
    fill "$(msg SUMMARY)" count "$missing"
    exit 1
fi
fill "$(msg OK)" tools "$found"
