//! The runner (`make workshop-run`) and `make workshop-install`.

use super::Msg;

messages! {
    RUN;

    // The runner (`make workshop-run`).
    RUNNING: "controllers running in {scope}; Ctrl-C stops them", "{scope}コントローラーを実行中です。Ctrl-C で止まります";
    SCOPE_NAMESPACE: "namespace {namespace}", "Namespace {namespace} を対象に";
    SCOPE_ALL: "every namespace", "すべての Namespace を対象に";
    TEST_SERVER_STARTED: "test API server on {url} with your CRDs installed; in another terminal:\n  export KUBECONFIG={kubeconfig}",
        "テスト用 API サーバーを {url} で起動し、自分の CRD をインストールしました。別のターミナルで:\n  export KUBECONFIG={kubeconfig}";
    STAGE_ZERO_RUN: "stage 0 defines the API and has no controller: make workshop-run STAGE=1 runs the Number controller (exercise 1b)",
        "ステージ 0 は API を定義するだけで、コントローラーはありません。make workshop-run STAGE=1 で Number コントローラー (演習 1b) が動きます";
    RUN_WITHOUT_CLUSTER: "or run against a test API server of your own (ARGS=--test-server)",
        "または専用のテスト用 API サーバーで動かしてください (ARGS=--test-server)";
    CONTROLLER_STOPPED: "the {kind} controller stopped: {why}{others}. Fix it, then run again",
        "{kind} コントローラーが停止しました: {why}{others}。直してから、もう一度起動してください";
    OTHERS_KEEP_RUNNING: "; the other controllers keep running", "。ほかのコントローラーは動き続けます";
    STREAM_ENDED: "it returned (the controller's stream ended)", "戻ってきました (コントローラーのストリームが終わりました)";
    EXERCISE_TODO: "not yet implemented: EXERCISE {exercise} in {file}",
        "まだ書かれていない演習です: {file} の演習 {exercise}";
    PANIC_AT: "{message} (at {at})", "{message} (場所: {at})";
    EVERY_CONTROLLER_STOPPED: "every controller stopped: fix the code and run again",
        "すべてのコントローラーが停止しました。コードを直して、もう一度起動してください";
    STOPPED: "stopped: the {kinds} controller (see above)", "{kinds} コントローラーが停止しました (上のログを見てください)";
    AND: " and ", "と";
    CRD_NOT_INSTALLED: "the CRD {name} is not installed in the cluster of your kubeconfig: run `make workshop-install` (or make workshop-run ARGS=--test-server)",
        "CRD {name} が kubeconfig のクラスターにインストールされていません。`make workshop-install` を実行してください (または make workshop-run ARGS=--test-server)";
    CRD_OUTDATED: "the CRD {name} in the cluster is not the one {track} generate now: run `make workshop-install` again",
        "クラスターの CRD {name} は、{track}から今生成されるものと違います。もう一度 `make workshop-install` を実行してください";
    UNDECODABLE: "{kind} {namespace}/{name} cannot be decoded with your {kind} type, so your controllers do not see it until it changes (fix it, or delete it): {why}",
        "{kind} {namespace}/{name} はあなたの {kind} 型でデコードできないため、変更されるまでコントローラーには見えません (直すか、削除してください): {why}";
    RECONCILE_FAILED: "reconcile failed; retrying in 1 s", "リコンサイルに失敗しました。1 秒後に再試行します";
    RECONCILED: "reconciled", "リコンサイルしました";
    WROTE: "wrote {path}", "{path} を書きました";
    INSTALL_WITHOUT_CLUSTER: "or use a test API server (make testserver, in a terminal of its own)",
        "またはテスト用 API サーバーを使ってください (専用のターミナルで make testserver)";
    COULD_NOT_RUN: "could not run {program}: {error} (is kubectl installed and on PATH?)",
        "{program} を実行できません: {error} (kubectl はインストールされ、PATH にありますか？)";
    KUBECTL_APPLY_FAILED: "kubectl apply failed (see above)", "kubectl apply が失敗しました (上を見てください)";
    KUBECTL_TIMEOUT: "kubectl did not answer within 60 s", "kubectl が 60 秒以内に応答しませんでした";
}
