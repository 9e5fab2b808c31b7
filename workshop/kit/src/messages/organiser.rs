//! The organiser's commands: `make workshop-room` (names, the address the files carry, the
//! closing table and what each participant types) and `make workshop-room-down`; and what a
//! participant is told when the room's access ends.

use super::Msg;

messages! {
    ORGANISER;

    // Names: one line per refused name, then the refusal.
    NAME_NOT_A_LABEL: "the name {name} is refused: a participant's name is lowercase ASCII letters, digits and hyphens (it names a namespace and a file); use {suggested}",
        "名前 {name} は使えません: 参加者の名前は ASCII の小文字、数字、ハイフンだけです (Namespace とファイルの名前になります)。{suggested} を使ってください";
    NAME_NO_ASCII: "the name {name} is refused: a participant's name is lowercase ASCII letters, digits and hyphens (it names a namespace and a file); write it in romaji, or use {suggested}",
        "名前 {name} は使えません: 参加者の名前は ASCII の小文字、数字、ハイフンだけです (Namespace とファイルの名前になります)。ローマ字で書くか、{suggested} を使ってください";
    NAME_TWICE: "the name {name} is given {count} times: each participant needs a name of their own (e.g. {suggested})",
        "名前 {name} が {count} 回指定されています: 参加者ごとに別の名前が必要です (たとえば {suggested})";
    NAMES_REFUSED: "nothing set up: fix the names above and run it again",
        "何もセットアップしていません: 上の名前を直して、もう一度実行してください";
    PARTICIPANT_REFUSED: "PARTICIPANT={name}: a participant's name is lowercase ASCII letters, digits and hyphens, as the room's files are named: use PARTICIPANT={suggested}",
        "PARTICIPANT={name}: 参加者の名前は、会場のファイル名と同じく ASCII の小文字、数字、ハイフンだけです。PARTICIPANT={suggested} を使ってください";

    // The address the participants' files carry.
    ROOM_ON: "setting up the room on {described} (participants: {count}); their files will name {server}",
        "{described} に参加者 {count} 人の会場をセットアップします。ファイルに書く接続先は {server} です";
    ROOM_SERVER_LOCAL: "the cluster of your kubeconfig ({described}) is served at {server}, an address of this machine only (loopback, or kind's or minikube's network on it): no participant's laptop reaches it. Give the address they reach it at: make workshop-room ROOM_SERVER=https://<address>:<port> PARTICIPANTS=\"…\" (ORGANISER.md says how to make a cluster reachable)",
        "kubeconfig のクラスター ({described}) の接続先 {server} は、このマシンの中だけのアドレスです (ループバックか、このマシン上の kind や minikube のネットワーク)。参加者のノート PC からは届きません。参加者から届くアドレスを指定してください: make workshop-room ROOM_SERVER=https://<アドレス>:<ポート> PARTICIPANTS=\"…\" (クラスターを会場から届くようにする方法は ORGANISER.md にあります)";
    ROOM_SERVER_BAD: "ROOM_SERVER={server} is not an address the files can carry: write it https://<address>:<port>",
        "ROOM_SERVER={server} はファイルに書けるアドレスではありません: https://<アドレス>:<ポート> の形で書いてください";
    ROOM_SERVER_NOT_NAMED: "{server} answers, but the API server's certificate does not name {host} ({cause}): every participant's kubectl would refuse it. Add {host} to the certificate (kubeadm init --apiserver-cert-extra-sans={host}; k3s --tls-san {host}; minikube start --apiserver-ips={host} --listen-address=0.0.0.0), or use a managed cluster's address",
        "{server} は応答しますが、API サーバーの証明書に {host} が含まれていません (「{cause}」)。このままでは参加者全員の kubectl が接続を拒否します。証明書に {host} を加えるか (kubeadm init --apiserver-cert-extra-sans={host}、k3s --tls-san {host}、minikube start --apiserver-ips={host} --listen-address=0.0.0.0)、マネージドクラスターのアドレスを使ってください";
    ROOM_SERVER_UNREACHABLE: "cannot reach {server} from here ({cause}): check the address and the port (ROOM_SERVER=https://<address>:<port>), and that the API server listens there",
        "ここから {server} に接続できません (「{cause}」)。アドレスとポート (ROOM_SERVER=https://<アドレス>:<ポート>) と、API サーバーがそこで待ち受けているかを確かめてください";
    ROOM_CA_UNREADABLE: "cannot read {path}, the certificate authority your kubeconfig names ({cause}): the participants' files carry it inline, so it must be readable here",
        "kubeconfig が指定する認証局 {path} を読めません (「{cause}」)。参加者のファイルにはその中身を書き込むので、ここで読める必要があります";

    // The tokens.
    ROOM_TOKEN_HOURS_BAD: "TOKEN_HOURS={hours}: a token lasts 1 to 8760 hours (the default, 36, covers the evening before and the day)",
        "TOKEN_HOURS={hours}: トークンの有効期間は 1〜8760 時間です (既定の 36 時間で前日の夜から当日まで使えます)";
    ROOM_TOKEN_SHORTER: "the cluster issued {participant}'s token until {expires}, shorter than the {hours} h asked (its --service-account-max-token-expiration): run make workshop-room again before it ends",
        "クラスターが発行した {participant} のトークンの有効期限は {expires} で、指定の {hours} 時間より短くなっています (--service-account-max-token-expiration による制限)。期限が切れる前に make workshop-room をもう一度実行してください";
    FILE_HEADER: "math-workshop room: participant {participant}, namespace {namespace}, token valid until {expires}. Made by make workshop-room; make workshop-room-down ends it.",
        "math-workshop の会場: 参加者 {participant}、Namespace {namespace}、トークンの有効期限 {expires}。make workshop-room が作成し、make workshop-room-down で無効になります。";

    // The closing table and what each participant types.
    TABLE_NAME: "NAME", "名前";
    TABLE_FILE: "FILE", "ファイル";
    TABLE_NAMESPACE: "NAMESPACE", "作業用の Namespace";
    TABLE_EXPIRES: "TOKEN VALID UNTIL", "トークンの有効期限";
    EXPIRES_IN: "{at} (in {hours} h)", "{at} (あと {hours} 時間)";
    ROOM_HAND_OUT: "Give each participant their file (a shared folder, a USB stick): it goes to workshop/room/<name>.kubeconfig in their clone. Then they type, in every terminal:",
        "各参加者に自分のファイルを渡してください (共有ドライブか USB メモリ)。置き場所は各自のクローンの workshop/room/<名前>.kubeconfig です。参加者はターミナルごとに次の 2 行を入力します:";

    // Taking the room down.
    DOWN_ON: "taking the room down on {described}", "{described} の会場を片付けます";
    DOWN_ACCOUNTS: "deleted the ServiceAccounts, whose tokens now answer 401: {names}",
        "ServiceAccount を削除しました (そのトークンは以後 401 になります): {names}";
    DOWN_CLUSTER_RBAC: "deleted the ClusterRole {role} and its ClusterRoleBindings: {names}",
        "ClusterRole {role} とその ClusterRoleBinding を削除しました: {names}";
    DOWN_NAMESPACES: "deleted the namespaces, and with them the Roles, RoleBindings and objects in them: {names}",
        "Namespace を削除しました (中の Role、RoleBinding、オブジェクトも一緒に消えます): {names}";
    DOWN_CRDS: "deleted the room's CRDs, and with them every Number, Tuple and Fermat: {names}",
        "会場の CRD を削除しました (Number、Tuple、Fermat もすべて一緒に消えます): {names}";
    DOWN_FILES: "removed the files from {dir}: {names}", "{dir} のファイルを削除しました: {names}";
    DOWN_GONE: "nothing of the room is left on the cluster (gone after {seconds} s)",
        "クラスターに会場のものは何も残っていません ({seconds} 秒で消えました)";
    DOWN_LEFT: "still there after {seconds} s: {left}. The cluster's namespace controller or garbage collector is slow: run make workshop-room-down again later",
        "{seconds} 秒たってもまだ残っています: {left}。クラスターの Namespace コントローラーかガベージコレクターが遅れています。しばらくしてから make workshop-room-down をもう一度実行してください";
    DOWN_NOTHING: "no room on {described}: nothing labelled math.example.com/workshop-room there",
        "{described} に会場はありません: math.example.com/workshop-room のラベルが付いたものは見つかりませんでした";

    // The participant, when the room's access ends.
    ACCESS_ENDED: "your room access has ended or is not valid ({described} answered 401): ask the organiser for a new file — make workshop-room PARTICIPANTS={participant}",
        "会場へのアクセスが終了したか、無効です ({described} が 401 を返しました)。主催者に新しいファイルを頼んでください — make workshop-room PARTICIPANTS={participant}";
    RIGHTS_ENDED: "your rights in the room were taken away ({described} answered 403 for your namespace {namespace}): ask the organiser to give them back — make workshop-room PARTICIPANTS={participant}",
        "会場での権限がなくなりました ({described} が自分の Namespace {namespace} について 403 を返しました)。主催者に戻してもらってください — make workshop-room PARTICIPANTS={participant}";
    CREDENTIALS_REFUSED: "the cluster of your kubeconfig ({described}) refuses its credentials (401: expired or not valid): get new ones from whoever gave you the kubeconfig, {instead}",
        "kubeconfig のクラスター ({described}) が認証情報を受け付けません (401: 期限切れか無効)。kubeconfig をくれた人から新しいものをもらうか、{instead}";
    ROOM_FILE_MISSING: "KUBECONFIG={path} does not exist; {dir} holds {files} (the files are named as make workshop-room printed the names)",
        "KUBECONFIG={path} はありません。{dir} にあるのは {files} です (ファイル名は make workshop-room が表示した名前のとおりです)";

    // Their help texts.
    CLI_ROOM_SERVER: "The address the participants' laptops reach the API server at (https://<address>:<port>), when your kubeconfig's is this machine's own.",
        "参加者のノート PC から API サーバーに届くアドレス (https://<アドレス>:<ポート>)。kubeconfig の接続先がこのマシンの中だけのときに指定する";
    CLI_ROOM_TOKEN_HOURS: "How long the participants' tokens last, in hours (default 36: the evening before and the day).",
        "参加者のトークンの有効期間 (時間)。既定は 36 (前日の夜から当日まで)";
    CLI_ROOM_DIR: "Where the participants' kubeconfigs are (default: workshop/room/).",
        "参加者の kubeconfig を置くディレクトリ (既定: workshop/room/)";
    CLI_ROOM_DOWN: "For the organiser: take the room down (its namespaces, ServiceAccounts and their tokens, RBAC, CRDs, files).",
        "主催者向け: 会場を片付ける (Namespace、ServiceAccount とそのトークン、RBAC、CRD、ファイル)";
}
