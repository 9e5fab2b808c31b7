//! The tools that work while the exercises may not compile (`make workshop-watch`,
//! `make workshop-skip`).

use super::Msg;

messages! {
    TOOLS;

    // The tools (`make workshop-watch`, `make workshop-skip`).
    ERROR: "error: {message}", "エラー: {message}";
    NOT_THERE: "{path} is not there: run this from the repository (make workshop-watch)",
        "{path} がありません。リポジトリの中で実行してください (make workshop-watch)";
    WATCH_NEXT: "Next: stage {stage} ({kind}, workshop/src/exercises/{file}), in the guide's \"Stage {stage}\". The watch checks stage {stage} from now on: save an exercise file, or press Enter.",
        "次はステージ {stage} ({kind}、workshop/src/exercises/{file}) です。ガイドの「ステージ {stage}」を見てください。これからはステージ {stage} をチェックします。演習ファイルを保存するか、Enter を押してください。";
    WATCH_LAST: "That was the last stage. The guide goes on with the mathematics; Ctrl-C stops the watch.",
        "これが最後のステージでした。ガイドは数学の話に続きます。Ctrl-C で watch が止まります。";
    WATCH_WAITING: "Watching workshop/src/exercises/: save to check again, Enter to check now, Ctrl-C to stop.",
        "workshop/src/exercises/ を見張っています。保存するとチェックし直し、Enter ですぐチェック、Ctrl-C で終了します。";
    WATCH_HEADER: "━━ workshop-watch: stage {stage} ({kind}), workshop/src/exercises/{file} ━━",
        "━━ workshop-watch: ステージ {stage} ({kind})、workshop/src/exercises/{file} ━━";
    WATCH_BUILDING: "building (cargo build --profile workshop -p math-workshop) …", "ビルド中 (cargo build --profile workshop -p math-workshop) …";
    WATCH_NO_CARGO: "✗ cannot run cargo: {error}", "✗ cargo を実行できません: 「{error}」";
    WATCH_NO_COMPILE_ONE: "✗ does not compile (1 error, {seconds} s):", "✗ コンパイルできません (エラー 1 件、{seconds} 秒):";
    WATCH_NO_COMPILE: "✗ does not compile ({count} errors, {seconds} s):", "✗ コンパイルできません (エラー {count} 件、{seconds} 秒):";
    WATCH_MORE_ERRORS: "  … and {count} more (cargo build --profile workshop -p math-workshop shows them all, in full)",
        "  … ほかに {count} 件 (cargo build --profile workshop -p math-workshop ですべて詳しく見られます)";
    WATCH_FIX_IT: "Fix it and save: the watch builds again.", "直して保存すると、もう一度ビルドします。";
    WATCH_NOTHING_RECOMPILED: "nothing to recompile", "再コンパイルなし";
    WATCH_RECOMPILED: "recompiled: {crates}", "再コンパイル: {crates}";
    WATCH_BUILT: "built in {seconds} s ({recompiled})", "{seconds} 秒でビルド ({recompiled})";
    WATCH_CANNOT_RUN: "✗ cannot run {program}: {error}", "✗ {program} を実行できません: 「{error}」";
    WATCH_PASSED: "✓ passed stage {stage} in {total} s after the save (build {build} s, check {check} s)",
        "✓ ステージ {stage} 合格。保存から {total} 秒 (ビルド {build} 秒、チェック {check} 秒)";
    WATCH_NOT_YET: "✗ not yet: stage {stage} in {total} s after the save (build {build} s, check {check} s)",
        "✗ ステージ {stage} はまだです。保存から {total} 秒 (ビルド {build} 秒、チェック {check} 秒)";
    SKIP_CANNOT_READ: "cannot read {path}: {error}", "{path} を読めません: 「{error}」";
    SKIP_CANNOT_KEEP: "cannot keep your file as {path}: {error}", "自分のファイルを {path} として残せません: 「{error}」";
    SKIP_CANNOT_WRITE: "cannot write {path}: {error}", "{path} に書き込めません: 「{error}」";
    SKIP_ALREADY: "Stage {stage} ({kind}): {path} is the reference solution already.\n",
        "ステージ {stage} ({kind}): {path} はもう模範解答です。\n";
    SKIP_DONE: "Stage {stage} ({kind}): {path} is now the reference solution.\nYours is kept beside it as {kept} (to take it back: mv {kept} {path}).\n",
        "ステージ {stage} ({kind}): {path} を模範解答に置き換えました。\n自分のものは {kept} として隣に残してあります (戻すには: mv {kept} {path})。\n";
    SKIP_EARLIER: "Note: {path} still has an exercise to fill in, and the checks of stage {stage} and later run your {kind} controller too: `make workshop-skip STAGE={earlier}` takes the reference for it as well.\n",
        "注意: {path} にはまだ埋めていない演習があります。ステージ {stage} 以降のチェックは自分の {kind} コントローラーも動かすので、`make workshop-skip STAGE={earlier}` でそちらも模範解答にしてください。\n";
    SKIP_NEXT: "Go on with stage {next} in {path}: make workshop-check STAGE={next} (or make workshop-watch STAGE={next}).\n",
        "ステージ {next} を {path} で続けましょう: make workshop-check STAGE={next} (または make workshop-watch STAGE={next})。\n";
    SKIP_LAST: "That was the last stage: make workshop-check STAGE=3 shows it passing; the guide goes on with the mathematics.\n",
        "これが最後のステージでした。make workshop-check STAGE=3 で合格を確かめられます。ガイドは数学の話に続きます。\n";
    SKIP_NO_STAGE: "there is no stage {stage} (1, 2 or 3)", "ステージ {stage} はありません (1、2、3 のどれか)";
}
