//! Connecting to the cluster of the kubeconfig.

use super::Msg;

messages! {
    CLUSTER;

    // Connecting to the cluster.
    NO_KUBECONFIG: "no kubeconfig (KUBECONFIG is unset and ~/.kube/config does not exist)",
        "kubeconfig がありません (KUBECONFIG が未設定で、~/.kube/config もありません)";
    NO_USABLE_KUBECONFIG: "no usable kubeconfig at KUBECONFIG={path} ({cause})",
        "KUBECONFIG={path} に使える kubeconfig がありません (「{cause}」)";
    START_A_CLUSTER: "{missing}: with the guide's test API server, export KUBECONFIG=/tmp/math.kubeconfig in this terminal (the server writes it when it starts: {command}, in a terminal of its own); with minikube or kind, start it (they write one); {instead}",
        "{missing}。ガイドのテスト用 API サーバーを使っているなら、このターミナルで export KUBECONFIG=/tmp/math.kubeconfig を実行してください (このファイルはサーバーが起動時に書きます。専用のターミナルで {command})。minikube か kind なら起動してください (どちらも kubeconfig を書きます)。{instead}";
    KUBECONFIG_UNUSABLE: "the kubeconfig ({paths}) cannot be used: {cause}; {instead}",
        "kubeconfig ({paths}) を使えません: 「{cause}」。{instead}";
    NO_CLIENT: "cannot make a client for {described}: {cause}", "{described} のクライアントを作れません: 「{cause}」";
    DOES_NOT_ANSWER: "the cluster of your kubeconfig ({described}) does not answer: {cause}. {start}, {instead}",
        "kubeconfig のクラスター ({described}) が応答しません: 「{cause}」。{start}。{instead}";
    DID_NOT_ANSWER: "the cluster of your kubeconfig ({described}) did not answer within 10 s. {start}, {instead}",
        "kubeconfig のクラスター ({described}) が 10 秒以内に応答しませんでした。{start}。{instead}";
    START_TEST_SERVER: "Is the test API server still running? Start it again ({command})",
        "テスト用 API サーバーはまだ動いていますか？ もう一度起動してください ({command})";
    START_MINIKUBE: "Start it (minikube start)", "起動してください (minikube start)";
    START_KIND: "Start it (docker start {name}-control-plane)", "起動してください (docker start {name}-control-plane)";
    ON_CONTEXT: "context {context} ({server})", "コンテキスト {context} ({server})";
    START_ANY: "Start it (minikube start, or docker start <name>-control-plane for kind)",
        "起動してください (minikube start、kind なら docker start <name>-control-plane)";
}
