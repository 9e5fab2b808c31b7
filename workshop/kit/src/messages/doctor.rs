//! `make workshop-doctor` (`workshop/doctor.sh`).

use super::Msg;

messages! {
    DOCTOR;

    // make workshop-doctor (workshop/doctor.sh, a shell script: it runs before anything is
    // built; workshop/tests/doctor.rs checks that it prints these very texts).
    DOCTOR_OK: "workshop-doctor: ✓ {tools}: everything the workshop builds with is here",
        "workshop-doctor: ✓ {tools}: ワークショップのビルドに必要なものはそろっています";
    DOCTOR_MISSING: "✗ {tool} is missing; to install it: {command}",
        "✗ {tool} が見つかりません。インストールするには: {command}";
    DOCTOR_CC: "cc (a C compiler: ring and jemalloc compile C code)",
        "cc (C コンパイラー。ring と jemalloc が C のコードをコンパイルします)";
    DOCTOR_RUST_OLD: "✗ rustc {version} is too old: this project is Rust edition 2024 and needs {needed} or newer; to update: {command}",
        "✗ rustc {version} は古すぎます。このプロジェクトは Rust edition 2024 で、{needed} 以降が必要です。更新するには: {command}";
    DOCTOR_PACKAGE: "the package {package} of your distribution's package manager",
        "ディストリビューションのパッケージマネージャーで {package} パッケージ";
    DOCTOR_SUMMARY: "workshop-doctor: {count} missing (above); install, then run make workshop-doctor again",
        "workshop-doctor: 足りないものが {count} 件あります (上記)。インストールしてから、もう一度 make workshop-doctor を実行してください";
    DOCTOR_WSL_MNT: "✗ this clone is on Windows' disk ({dir}): under WSL a build there is many times slower; clone it into your Linux home: cd ~ && git clone <the repository's URL>",
        "✗ このクローンは Windows 側のディスク ({dir}) にあります。WSL ではそこでのビルドが何倍も遅くなります。Linux のホームにクローンしてください: cd ~ && git clone <リポジトリの URL>";
    DOCTOR_DISK: "✗ only {free} of disk is free here; the day's build needs {needed}: free some space (cargo clean in old Rust projects is a good start)",
        "✗ ここのディスクの空きは {free} しかありません。当日のビルドには {needed} 必要です。空きを作ってください (古い Rust プロジェクトでの cargo clean が手始めです)";
    DOCTOR_DISK_MORE: "✗ only {free} of disk is free here; the day's build needs {needed} more ({built} of it is built already): free some space (cargo clean in old Rust projects is a good start)",
        "✗ ここのディスクの空きは {free} しかありません。当日のビルドには、ビルド済みの {built} のほかにあと {needed} 必要です。空きを作ってください (古い Rust プロジェクトでの cargo clean が手始めです)";
    DOCTOR_PLUGIN_PATH: "✗ make workshop-prepare installs kubectl math into {dir}, which is not on your PATH, so kubectl would not find it; run: export PATH=\"{dir}:$PATH\" (and add that line to ~/.bashrc)",
        "✗ make workshop-prepare は kubectl math を {dir} にインストールしますが、そのディレクトリが PATH に入っていないため、kubectl から見つかりません。実行してください: export PATH=\"{dir}:$PATH\" (~/.bashrc にも同じ行を書き足します)";
    DOCTOR_CARGO_PATH: "✗ Rust is installed in ~/.cargo/bin, but that folder is not on your PATH; run: . \"$HOME/.cargo/env\" (or open a new terminal)",
        "✗ Rust は ~/.cargo/bin にインストールされていますが、そのディレクトリが PATH に入っていません。実行してください: . \"$HOME/.cargo/env\" (または新しいターミナルを開きます)";
    DOCTOR_PREPARED: "workshop-prepare: done in {minutes} min {seconds} s, {total} of disk (target/ {target}, crates in ~/.cargo {crates}); the workshop now runs without network",
        "workshop-prepare: 完了しました ({minutes} 分 {seconds} 秒、ディスク {total}: target/ が {target}、~/.cargo のクレートが {crates})。これでワークショップはネットワークなしで動きます";
    DOCTOR_KUBECTL_UNTESTED: "! kubectl {version} works, but the guide's outputs were tested with kubectl 1.32 to 1.36: some lines may read otherwise",
        "! kubectl {version} は使えますが、ガイドの出力は kubectl 1.32〜1.36 で確かめたものです。表示が少し違う行があるかもしれません";
}
