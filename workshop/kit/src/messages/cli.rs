//! clap's `--help` and usage errors, for both binaries.

use super::Msg;

messages! {
    CLI;

    // clap's --help (the texts of both binaries; the headings and usage errors in English are
    // clap's own, the English here says what it says).
    CLI_USAGE: "Usage:", "使い方:";
    CLI_COMMANDS: "Commands", "コマンド";
    CLI_ARGUMENTS: "Arguments", "引数";
    CLI_OPTIONS: "Options", "オプション";
    CLI_HELP: "Print help", "ヘルプを表示する";
    CLI_VERSION: "Print version", "バージョンを表示する";
    CLI_HELP_COMMAND: "Print this message or the help of the given subcommand(s)",
        "このヘルプ、または指定したサブコマンドのヘルプを表示する";
    CLI_LANG: "The language of the messages, en or ja (default: ja when LC_ALL, LC_MESSAGES or LANG starts with ja)",
        "メッセージの言語、en か ja (既定: LC_ALL、LC_MESSAGES、LANG が ja で始まれば ja)";
    CLI_WORKSHOP: "The kubebuilder hands-on, written by you: stage 1 Number, stage 2 Tuple owns Numbers, stage 3 Fermat owns Tuples.",
        "自分で書く kubebuilder ハンズオン: ステージ 1 は Number、ステージ 2 は Number を所有する Tuple、ステージ 3 は Tuple を所有する Fermat";
    CLI_CRDS: "Print the CRDs generated from your types (or write one file per CRD with --dir).",
        "自分の型から生成した CRD を表示する (--dir なら CRD ごとにファイルを書く)";
    CLI_CRDS_DIR: "Write `<name>.yaml` files into this directory instead of printing.",
        "表示する代わりに、このディレクトリに `<name>.yaml` を書く";
    CLI_SOLUTION: "Use the reference solutions instead of your exercises.",
        "自分の演習の代わりに模範解答を使う";
    CLI_INSTALL: "Write your CRDs to workshop/crds/ and install them into the cluster of the current kubeconfig with kubectl apply, unless they would replace different CRDs that objects in other namespaces use (a shared cluster).",
        "自分の CRD を workshop/crds/ に書き、現在の kubeconfig のクラスターに kubectl apply でインストールする (ほかの Namespace のオブジェクトが使う別の CRD を置き換えることになる共有クラスターでは、しない)";
    CLI_INSTALL_FORCE: "Replace the cluster's CRDs even when objects in other namespaces use them.",
        "ほかの Namespace のオブジェクトが使っていても、クラスターの CRD を置き換える";
    CLI_RUN: "Run your controllers of stages 1..=N against the current kubeconfig.",
        "ステージ 1 から N までの自分のコントローラーを、現在の kubeconfig に対して動かす";
    CLI_RUN_STAGE: "The last stage to run (1 Number, 2 +Tuple, 3 +Fermat).",
        "動かす最後のステージ (1 Number、2 +Tuple、3 +Fermat。既定は 3)";
    CLI_RUN_TEST_SERVER: "Start an in-memory test API server with your CRDs installed, and run against it.",
        "自分の CRD を入れたインメモリのテスト用 API サーバーを起動し、それに対して動かす";
    CLI_RUN_NAMESPACE: "The namespace your controllers look after (default: kubectl's, where it puts what you apply: the one the current context names, else default).",
        "コントローラーが受け持つ Namespace (既定: kubectl と同じく、現在のコンテキストが指定するもの。指定がなければ default。kubectl が apply したものを置く所)";
    CLI_ROOM: "For the organiser: set a shared cluster up (CRDs; per participant a namespace, a ServiceAccount limited to it, workshop/room/<name>.kubeconfig).",
        "主催者向け: 共有クラスターをセットアップする (CRD と、参加者ごとに Namespace、その中だけに権限を限った ServiceAccount、workshop/room/<名前>.kubeconfig)";
    CLI_ROOM_PARTICIPANTS: "The participants' names (lower-case letters, digits, dashes).",
        "参加者の名前 (英小文字、数字、ハイフン)";
    CLI_RUN_ALL_NAMESPACES: "Look after every namespace, like kubebuilder's `make run` (a cluster of your own).",
        "kubebuilder の `make run` のように、すべての Namespace を受け持つ (自分専用のクラスター向け)";
    CLI_CHECK: "Check stage N: ✓ or ✗ per expectation, with hints; exits non-zero on any ✗.",
        "ステージ N をチェックする: 項目ごとに ✓ か ✗ とヒント。✗ が 1 つでもあれば終了コードは 0 以外";
    CLI_CHECK_STAGE: "The stage to check (1 Number, 2 Tuple, 3 Fermat).",
        "チェックするステージ (1 Number、2 Tuple、3 Fermat)";
    CLI_CHECK_CLUSTER: "Use the cluster of the current kubeconfig instead of a fresh test API server, in the namespace math-workshop-check-<participant>.",
        "新しいテスト用 API サーバーの代わりに現在の kubeconfig のクラスターを使う (Namespace は math-workshop-check-<自分>)";
    CLI_PARTICIPANT: "Who you are, for the namespace of --cluster checks (default: user-host).",
        "自分の名前。--cluster のチェックの Namespace に使う (既定: user-host)";
    CLI_CHECK_FORCE: "With --cluster: install the CRDs even over different ones that others use.",
        "--cluster のとき: ほかの人が使う別の CRD があっても、CRD をインストールする";
    CLI_CHECK_TIMEOUT: "Seconds each expectation may take (default: 10 on the test server, 30 on a cluster).",
        "1 項目にかけてよい秒数 (既定: テスト用 API サーバーで 10、クラスターで 30)";
    CLI_TOOLS: "Watch, hint and skip, for the learner track.", "ワークショップ用の watch (保存のたびにチェック)、hint (ヒント)、skip (模範解答で追いつく)";
    CLI_WATCH: "Build and check a stage, and again on every save of an exercise file (Rustlings-style).",
        "ステージをビルドしてチェックし、演習ファイルを保存するたびにやり直す (Rustlings 風)";
    CLI_WATCH_STAGE: "The stage to check first (1 Number, 2 Tuple, 3 Fermat); the next one once it passes.",
        "最初にチェックするステージ (1 Number、2 Tuple、3 Fermat。既定は 1)。合格したら次へ進む";
    CLI_WATCH_CLUSTER: "Check on the cluster of the current kubeconfig instead of a private test API server.",
        "専用のテスト用 API サーバーの代わりに、現在の kubeconfig のクラスターでチェックする";
    CLI_WATCH_PARTICIPANT: "With --cluster: who you are (the namespace math-workshop-check-<participant>).",
        "--cluster のとき: 自分の名前 (Namespace は math-workshop-check-<自分>)";
    CLI_WATCH_TIMEOUT: "Seconds each expectation of a check may take.",
        "チェックの 1 項目にかけてよい秒数";
    CLI_SKIP: "Catch up: put the reference solution of stage N in workshop/src/exercises/ (yours is kept beside it as <file>.rs.mine), to go on with stage N+1 in your own code.",
        "追いつく: ステージ N の模範解答を workshop/src/exercises/ に置き (自分のものは <ファイル>.rs.mine として隣に残る)、ステージ N+1 を自分のコードで続ける";
    CLI_SKIP_STAGE: "The stage to take the reference solution of (1 Number, 2 Tuple, 3 Fermat).",
        "模範解答を使うステージ (1 Number、2 Tuple、3 Fermat)";
    CLI_HINT: "Show the next hint of the first unfinished exercise of stage N: first the way (the calls to make), then the complete code, one step per call (Rustlings-style).",
        "ステージ N でまだ書かれていない最初の演習の、次のヒントを表示する。最初は進め方 (使う呼び出し)、次に完成したコード。呼ぶたびに 1 段階ずつ (Rustlings 風)";
    CLI_HINT_STAGE: "The stage (0 API definition, 1 Number, 2 Tuple, 3 Fermat).",
        "ステージ (0 API の定義、1 Number、2 Tuple、3 Fermat)";
    CLI_HINT_ALL: "Every hint of the stage at once, the complete code included.",
        "ステージのヒントを完成したコードも含めてすべて一度に表示する";
    CLI_SNIPPETS: "For the project: write workshop/tests/snippets/generated.rs from the guides' and cheat sheets' ```rust blocks (make workshop-snippets), which a test compiles.",
        "プロジェクト用: ガイドとチートシートの ```rust ブロックから workshop/tests/snippets/generated.rs を書く (make workshop-snippets)。テストがそれをコンパイルする";

    // clap's usage errors, one line each.
    CLI_UNKNOWN_ARGUMENT: "unexpected argument {arg}", "{arg} という引数はありません";
    CLI_UNKNOWN_COMMAND: "unrecognized subcommand {command}", "{command} というサブコマンドはありません";
    CLI_VALUE_REQUIRED: "a value is required for {arg}", "{arg} に値を指定してください";
    CLI_INVALID_VALUE: "invalid value {value} for {arg}", "{arg} に {value} は使えません";
    CLI_MISSING_ARGUMENT: "missing {arg}", "{arg} を指定してください";
    CLI_CONFLICT: "{arg} cannot be used with {other}", "{arg} と {other} は一緒に使えません";
    CLI_INVALID_COMMAND_LINE: "the command line is not valid", "コマンドラインが正しくありません";
    CLI_DID_YOU_MEAN: " (did you mean {suggested}?)", " ({suggested} のことですか？)";
    CLI_SEE_HELP: "; --help shows the usage", "。使い方は --help で表示できます";
}
