//! Every sentence the learner track's tools print, in English and Japanese: one table, so that
//! a message cannot exist in one language only (a test walks [`ALL`]), and the placeholders of
//! both must match. The workshop's first audience is Japanese; kubectl's and the API server's
//! own words, Kubernetes and Rust terms, commands and names stay as they are.
//!
//! A table in code rather than rust-i18n or Fluent: no new crate in a build every participant
//! makes offline on a laptop, a misspelt message is a compile error (not a key printed at run
//! time), and the messages need no plural rules (Japanese has none; English ones are chosen in
//! code). `workshop/tools` includes this file by path: one catalogue for both crates.
//!
//! The language is the process's, chosen once by the binaries ([`choose`]): `--lang ja|en`,
//! else the locale (`LC_ALL`, `LC_MESSAGES`, `LANG`, the first set, as gettext reads them)
//! starting with `ja`. Libraries and tests that set nothing speak English.

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};

/// A language the tools speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Ja,
}

static JAPANESE: AtomicBool = AtomicBool::new(false);

/// The language of `--lang` if given, else of the locale variables (in gettext's order).
pub fn detect(flag: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Lang {
    let chosen = match flag {
        Some(flag) => Some(flag.to_string()),
        None => ["LC_ALL", "LC_MESSAGES", "LANG"]
            .into_iter()
            .filter_map(var)
            .find(|value| !value.is_empty()),
    };
    match chosen {
        Some(value) if value.to_ascii_lowercase().starts_with("ja") => Lang::Ja,
        _ => Lang::En,
    }
}

/// Sets the process's language from `--lang` and the environment; returns it.
pub fn choose(flag: Option<&str>) -> Lang {
    let lang = detect(flag, |name| std::env::var(name).ok());
    JAPANESE.store(lang == Lang::Ja, Ordering::Relaxed);
    lang
}

/// The process's language.
pub fn lang() -> Lang {
    if JAPANESE.load(Ordering::Relaxed) {
        Lang::Ja
    } else {
        Lang::En
    }
}

/// One message in both languages; `{name}` marks where a value goes.
#[derive(Debug, Clone, Copy)]
pub struct Msg {
    pub key: &'static str,
    pub en: &'static str,
    pub ja: &'static str,
}

impl Msg {
    /// The text in `lang`, its placeholders filled from `args`.
    pub fn render(&self, lang: Lang, args: &[(&str, &dyn Display)]) -> String {
        let mut text = match lang {
            Lang::En => self.en,
            Lang::Ja => self.ja,
        }
        .to_string();
        for (name, value) in args {
            text = text.replace(&format!("{{{name}}}"), &value.to_string());
        }
        text
    }

    /// The text in the process's language.
    pub fn fill(&self, args: &[(&str, &dyn Display)]) -> String {
        self.render(lang(), args)
    }

    /// The text in the process's language, without placeholders, for clap (which keeps
    /// `'static` headings).
    pub fn as_str(&self) -> &'static str {
        match lang() {
            Lang::En => self.en,
            Lang::Ja => self.ja,
        }
    }

    /// The text in the process's language, for a message without placeholders.
    pub fn text(&self) -> String {
        self.fill(&[])
    }
}

/// `t!(KEY, name = value, …)`: the message in the process's language with its values.
#[macro_export]
macro_rules! t {
    ($msg:expr $(, $name:ident = $value:expr)* $(,)?) => {
        $msg.fill(&[$((stringify!($name), &$value as &dyn ::std::fmt::Display)),*])
    };
}

macro_rules! messages {
    ($($key:ident: $en:expr, $ja:expr;)*) => {
        $(pub const $key: Msg = Msg { key: stringify!($key), en: $en, ja: $ja };)*
        /// Every message, for the test that each has both languages.
        pub const ALL: &[Msg] = &[$($key),*];
    };
}

messages! {
    // The check: its frame.
    STAGE_HEADER: "Stage {stage}: {kind} — {track}, {file}, on {on}",
        "ステージ {stage}: {kind} — {track} ({file})、{on}で実行";
    ON_TEST_SERVER: "the test API server", "テスト用 API サーバー";
    ON_CLUSTER: "the current cluster, namespace {namespace} (participant {participant})",
        "現在のクラスターの Namespace {namespace} (参加者 {participant})";
    TRACK_EXERCISES: "your exercises", "自分の演習";
    TRACK_SOLUTIONS: "the reference solutions", "模範解答";
    SUMMARY: "{passed} passed, {failed} failed", "合格 {passed} 件、不合格 {failed} 件";
    NO_SUCH_STAGE: "there are stages 1, 2 and 3, not {stage}",
        "ステージは 1、2、3 です ({stage} はありません)";
    CHECK_WITHOUT_CLUSTER: "or leave out CLUSTER=1 (the check then brings a test API server of its own)",
        "または CLUSTER=1 を外してください (チェックが専用のテスト用 API サーバーを起動します)";
    AFTER: "after {seconds} s", "({seconds} 秒待ちました)";
    CONTROLLER_PANICKED: "the {kind} controller panicked: {why}; fill in the exercise in {file}, then run the check again",
        "{kind} コントローラーがパニックしました: {why}。{file} の演習を埋めてから、もう一度チェックしてください";
    LAST_ERROR: " (last {kind} reconcile error: {error})",
        " (最後の {kind} のリコンサイルエラー: {error})";
    COMMAND_FAILED: "{command} failed: {said}", "{command} が失敗しました: 「{said}」";
    CREATE_CHECK_NAMESPACE: "create the check's namespace {namespace}",
        "チェック用の Namespace {namespace} を作る";
    INSTALL_CRDS: "install the CRDs generated from your types",
        "自分の型から生成した CRD をインストールする";
    GENERATE_CRDS: "generate the CRDs from your types", "自分の型から CRD を生成する";
    CRD_APPLY_FAILED: "kubectl apply of the CRDs generated from your types failed: {said}",
        "自分の型から生成した CRD の kubectl apply が失敗しました: 「{said}」";
    CRD_APPLY_HINT: "is the cluster reachable (kubectl get namespaces)? Does the CRD generate (cargo run --profile workshop -p math-workshop -- crds)?",
        "クラスターにつながりますか (kubectl get namespaces)? CRD を生成できますか (cargo run --profile workshop -p math-workshop -- crds)?";
    CRD_NOT_ESTABLISHED: "crd/{name} is not Established (the API server does not serve its kind yet)",
        "crd/{name} が Established になっていません (API サーバーがまだその種類を扱っていません)";
    CRDS_INSTALLED: "installed the CRDs generated from {track} (kubectl apply), namespace {namespace}",
        "{track}から生成した CRD をインストールしました (kubectl apply)。Namespace は {namespace}";
    CRDS_ALREADY: "the CRDs generated from {track} are installed already, namespace {namespace}",
        "{track}から生成した CRD はインストール済みです。Namespace は {namespace}";
    REACHABLE: "is the cluster reachable (kubectl get namespaces)?",
        "クラスターにつながりますか (kubectl get namespaces)?";
    APPLY_FAILED_ABOVE: "its kubectl apply failed above", "上の kubectl apply が失敗しています";

    // The check: what the stages share.
    NONE: "none", "なし";
    LIST_SEPARATOR: ", ", "、";
    MISSING: "missing: {names}", "{names} がありません";
    HAS_SPEC: "{name} has spec {spec}", "{name} の spec が {spec} です";
    CHILDREN: "{parent_kind} {parent} has its {count} {child_kind}s ({names}) with the desired specs",
        "{parent_kind} {parent} に、望ましい spec の {child_kind} が {count} 個ある ({names})";
    SEEN: "{subject}: {what} {after}", "{subject}: {what} {after}";
    SEEN_EXPECTED: "{subject}: {what} {after}, expected {expected}",
        "{subject}: {what} {after}。期待した値は {expected}";
    NO_BLOCK_OWNER_DELETION: "{names}: the ownerReference lacks blockOwnerDeletion: true, which kubectl delete --cascade=foreground waits for; {hint}",
        "{names}: オーナーリファレンスに blockOwnerDeletion: true がありません (kubectl delete --cascade=foreground はこれを見て待ちます)。{hint}";
    HAS_NO_OWNER: "{names} has none: {hint}", "{names} にコントローラーのオーナーリファレンスがありません。{hint}";
    HAVE_NO_OWNER: "{names} have none: {hint}", "{names} にコントローラーのオーナーリファレンスがありません。{hint}";
    OWNED: "each of them has a controller ownerReference to {parent_kind} {parent}",
        "どれも {parent_kind} {parent} を指すコントローラーのオーナーリファレンスを持つ";
    CANNOT_HEAL: "cannot delete {kind} {name} to see it come back: it never appeared",
        "{kind} {name} が一度も現れなかったので、消して戻ってくるかを確かめられません";
    COMES_BACK: "{kind} {name} comes back after kubectl delete",
        "{kind} {name} は kubectl delete のあと戻ってくる";
    NOT_BACK: "{kind} {name} did not come back {after}", "{kind} {name} が戻ってきません {after}";
    SPEC_STILL: "its spec is still {spec}", "spec が {spec} のままです";
    DOES_NOT_EXIST: "it does not exist", "存在しません";
    NEVER_APPEARED: "cannot {step}: {kind}s {names} never appeared",
        "{step}ことができません: {kind} {names} が一度も現れませんでした";
    DID_NOT_COME_BACK: "cannot {step}: {kind}s {names} did not come back after the kubectl delete above",
        "{step}ことができません: {kind} {names} が上の kubectl delete のあと戻ってきませんでした";
    ARE_GONE: "{when}: {count} {kind}s are gone", "{when}: {kind} {count} 個が消えた";
    STILL_EXIST: "{when}: {kind}s {names} still exist {after}", "{when}: {kind} {names} がまだあります {after}";
    FOREGROUND_NO_PARENT: "cannot delete {parent_kind} {parent} in the foreground: it does not exist",
        "{parent_kind} {parent} をフォアグラウンドで削除できません: 存在しません";
    FOREGROUND_NO_CHILD: "cannot delete {parent_kind} {parent} in the foreground: its {child_kind} {held} never appeared",
        "{parent_kind} {parent} をフォアグラウンドで削除できません: その {child_kind} {held} が一度も現れませんでした";
    FOREGROUND_NO_WATCH: "cannot watch the {child_kind}s to delete {parent_kind} {parent} in the foreground",
        "{parent_kind} {parent} をフォアグラウンドで削除するための {child_kind} のウォッチができません";
    FOREGROUND_NONE_RECREATED: "while {parent_kind} {parent} waited for its {child_kind}s (foreground deletion), none was re-created",
        "{parent_kind} {parent} が {child_kind} を待つ間 (フォアグラウンド削除)、作り直された子はない";
    FOREGROUND_RECREATED: "while {parent_kind} {parent} waited for its {child_kind}s (foreground deletion), the {parent_kind} controller re-created {names}",
        "{parent_kind} {parent} が {child_kind} を待つ間 (フォアグラウンド削除)、{parent_kind} コントローラーが {names} を作り直しました";
    FOREGROUND_GONE: "{parent_kind} {parent} is gone after its {child_kind}s (foreground deletion)",
        "{parent_kind} {parent} は {child_kind} のあとに消える (フォアグラウンド削除)";
    FOREGROUND_STILL: "{parent_kind} {parent} still exists {after}: the garbage collector deletes it once no child blocks it; {hint}",
        "{parent_kind} {parent} がまだあります {after}。止める子がなくなればガベージコレクターが消します。{hint}";
    GC_SLOW: "the cluster's garbage collector is deleting them, slowly ({left} still there after {seconds} s, {gone} gone meanwhile): your controller is not the cause. On a busy shared cluster kube-controller-manager deletes about 20 objects a second for the whole room; check again in a minute",
        "クラスターのガベージコレクターが少しずつ削除しています ({seconds} 秒で {gone} 個が消え、{left} 個が残っています)。自分のコントローラーが原因ではありません。混んでいる共有クラスターでは、kube-controller-manager が会場全員の分をまとめて削除するので、1 秒に 20 個ほどしか進みません。1 分ほど待ってから、もう一度チェックしてください";
    FOREGROUND_STILL_SLOW: "{parent_kind} {parent} still exists {after}, and none of its {child_kind}s came back: {slow}",
        "{parent_kind} {parent} がまだあります {after}。{child_kind} は 1 つも作り直されていません。{slow}";

    // The check: stage 1.
    NUMBER_CRD_VALUE: "the Number CRD generated from NumberSpec has spec.value, an integer",
        "NumberSpec から生成した Number の CRD に spec.value (整数) がある";
    NUMBER_CRD_VALUE_HINT: "add `pub value: i64` to NumberSpec (EXERCISE 1a in {file})",
        "NumberSpec に `pub value: i64` を追加してください ({file} の演習 1a)";
    NUMBER_CRD_STATUS: "the Number CRD generated from NumberStatus has status.observedGeneration, fizzBuzz, isSquare and isPrime",
        "NumberStatus から生成した Number の CRD に status.observedGeneration、fizzBuzz、isSquare、isPrime がある";
    NUMBER_CRD_STATUS_HINT: "NumberStatus lacks {missing}: add `observed_generation: i64`, `fizz_buzz: String`, `is_square: bool`, `is_prime: bool`, keeping #[serde(rename_all = \"camelCase\")] (EXERCISE 1a in {file})",
        "NumberStatus に {missing} がありません。#[serde(rename_all = \"camelCase\")] は残したまま、`observed_generation: i64`、`fizz_buzz: String`、`is_square: bool`、`is_prime: bool` を追加してください ({file} の演習 1a)";
    NUMBER_APPLY_HINT: "does NumberSpec have `pub value: i64` (EXERCISE 1a)? The CRD is generated from it",
        "NumberSpec に `pub value: i64` はありますか (演習 1a)? CRD はそこから生成されます";
    NOT_EXIST: "{kind} {name} does not exist", "{kind} {name} が存在しません";
    NUMBER_EXPECTED: "fizzBuzz {fizz}, isSquare {square}, isPrime {prime}",
        "fizzBuzz は {fizz}、isSquare は {square}、isPrime は {prime}";
    NUMBER_SAYS: "its status says {got} for value {value}", "値 {value} に対して status が {got} です";
    GENERATION_BEHIND: "status.observedGeneration is {observed}, not metadata.generation {generation}",
        "status.observedGeneration が {observed} で、metadata.generation の {generation} と違います";
    NUMBER_NO_STATUS: "{subject} has no status.fizzBuzz {after}", "{subject} に status.fizzBuzz がありません {after}";
    NUMBER_NO_STATUS_HINT: "did you patch the status subresource (Api::patch_status), not the object? (EXERCISE 1b in {file})",
        "オブジェクト本体ではなく、ステータスサブリソースにパッチしましたか (Api::patch_status)? ({file} の演習 1b)";
    NUMBER_WRONG_HINT: "compute every field from the current spec.value on each reconcile (crate::math::fizzbuzz, is_square, is_prime) and set observed_generation from metadata.generation (EXERCISE 1b in {file})",
        "リコンサイルのたびに、今の spec.value からすべてのフィールドを計算し (crate::math::fizzbuzz、is_square、is_prime)、observed_generation は metadata.generation から取ってください ({file} の演習 1b)";

    // The check: stage 2.
    TUPLE_CRD_HINT: "is the Tuple CRD installed?", "Tuple の CRD はインストールされていますか?";
    TUPLE_CREATE_HINT: "create one Number per item, named <tuple>-<index>, with Api::patch(.., &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number)) (EXERCISE 2a in {file})",
        "要素ごとに <tuple>-<index> という名前の Number を、Api::patch(.., &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number)) で 1 つずつ作ってください ({file} の演習 2a)";
    TUPLE_OWNER_HINT: "set number.metadata.owner_references to the Tuple's controller_owner_ref(&()), with block_owner_deletion: Some(true) (EXERCISE 2a in {file}): the garbage collector and .owns() follow it",
        "number.metadata.owner_references に Tuple の controller_owner_ref(&()) を block_owner_deletion: Some(true) 付きで入れてください ({file} の演習 2a)。ガベージコレクターも .owns() もこれをたどります";
    TUPLE_STATUS_HINT: "once every child Number's status describes its current spec (status.observedGeneration = metadata.generation), write TupleStatus with patch_status (EXERCISE 2c in {file}); are you woken when a Number's status changes (.owns, EXERCISE 2d)? Do the Numbers get a status (stage 1)?",
        "子の Number の status がすべて今の spec のもの (status.observedGeneration = metadata.generation) になったら、patch_status で TupleStatus を書いてください ({file} の演習 2c)。Number の status が変わったときに起こされていますか (.owns、演習 2d)? Number に status は付いていますか (ステージ 1)?";
    TUPLE_OWNS_HINT: "add .owns(ctx.watched::<Number>(), watcher::Config::default()) to the Tuple's Controller (EXERCISE 2d in {file}): without it, nothing tells the Tuple that its Number changed",
        "Tuple の Controller に .owns(ctx.watched::<Number>(), watcher::Config::default()) を追加してください ({file} の演習 2d)。これがないと、Number が変わったことを Tuple に伝えるものがありません";
    FORCE_HINT: "{hint}; and apply the whole desired child with .force() on every reconcile (EXERCISE {exercise})",
        "{hint}。また、リコンサイルのたびに望ましい子をまるごと .force() 付きで apply してください (演習 {exercise})";
    TUPLE_PUT_BACK: "Number tuple-sample-2 is put back to value 2 after the hand edit",
        "手で書き換えた Number tuple-sample-2 が値 2 に戻る";
    STEP_SHRINK: "shrink tuple-sample to [4]", "tuple-sample を [4] に縮める";
    TUPLE_EXTRAS_HINT: "delete the Numbers the Tuple owns that its spec no longer lists (EXERCISE 2b in {file})",
        "Tuple が所有する Number のうち、spec にもう載っていないものを削除してください ({file} の演習 2b)";
    WHEN_SHRUNK: "after shrinking tuple-sample to [4]", "tuple-sample を [4] に縮めたあと";
    STEP_DELETE_TUPLE: "delete Tuple tuple-sample", "Tuple tuple-sample を削除する";
    TUPLE_GC_HINT: "the garbage collector deletes a Number whose controller ownerReference names the deleted Tuple's uid: set it with controller_owner_ref (EXERCISE 2a in {file})",
        "ガベージコレクターは、コントローラーのオーナーリファレンスが削除された Tuple の uid を指す Number を消します。controller_owner_ref で設定してください ({file} の演習 2a)";
    WHEN_TUPLE_DELETED: "after deleting Tuple tuple-sample (garbage collection)",
        "Tuple tuple-sample を削除したあと (ガベージコレクション)";
    TUPLE_FOREGROUND_HINT: "a Tuple being deleted has a metadata.deletionTimestamp, and the given reconcile returns at once for it (`if tuple.metadata.deletion_timestamp.is_some()` in {file}): applying its children again re-creates each one the garbage collector deletes",
        "削除中の Tuple には metadata.deletionTimestamp があり、用意された reconcile はそのまますぐに戻ります ({file} の `if tuple.metadata.deletion_timestamp.is_some()`)。子をもう一度 apply すると、ガベージコレクターが消すたびに作り直してしまいます";
    TUPLE_ALL_SQUARES: "Tuple {name}: allSquares {all_squares}, for its current generation",
        "Tuple {name}: 今の generation について allSquares は {all_squares}";
    TUPLE_SAYS: "status.allSquares is {got} for observedGeneration {observed} (generation {generation})",
        "observedGeneration {observed} (generation {generation}) に対して status.allSquares が {got} です";
    TUPLE_NO_STATUS: "Tuple {name} has no status.allSquares {after}", "Tuple {name} に status.allSquares がありません {after}";
    TUPLE_EXPECTED: "allSquares {all_squares}", "allSquares が {all_squares}";
    TUPLE_WRONG_HINT: "allSquares is true exactly when every child Number's status.isSquare is; {hint}",
        "allSquares が true になるのは、子の Number の status.isSquare がすべて true のときだけです。{hint}";

    // The check: stage 3.
    FERMAT_CRD_HINT: "is the Fermat CRD installed?", "Fermat の CRD はインストールされていますか?";
    FERMAT_CREATE_HINT: "create one Tuple [a, n-a] per a in 1..=n/2, named <fermat>-<a>-and-<n-a>, with Api::patch and Patch::Apply (EXERCISE 3a in {file})",
        "1..=n/2 の a ごとに、<fermat>-<a>-and-<n-a> という名前の Tuple [a, n-a] を Api::patch と Patch::Apply で作ってください ({file} の演習 3a)";
    FERMAT_OWNER_HINT: "set tuple.metadata.owner_references to the Fermat's controller_owner_ref(&()), with block_owner_deletion: Some(true) (EXERCISE 3a in {file})",
        "tuple.metadata.owner_references に Fermat の controller_owner_ref(&()) を block_owner_deletion: Some(true) 付きで入れてください ({file} の演習 3a)";
    FERMAT_STATUS_HINT: "once every child Tuple's status describes its current spec, write FermatStatus with patch_status (EXERCISE 3c in {file}); are you woken when a Tuple changes (.owns, EXERCISE 3d)? Do the Tuples get allSquares (stage 2)?",
        "子の Tuple の status がすべて今の spec のものになったら、patch_status で FermatStatus を書いてください ({file} の演習 3c)。Tuple が変わったときに起こされていますか (.owns、演習 3d)? Tuple に allSquares は付いていますか (ステージ 2)?";
    FERMAT_OWNS_HINT: "add .owns(ctx.watched::<Tuple>(), watcher::Config::default()) to the Fermat's Controller (EXERCISE 3d in {file})",
        "Fermat の Controller に .owns(ctx.watched::<Tuple>(), watcher::Config::default()) を追加してください ({file} の演習 3d)";
    STEP_CHANGE_FERMAT: "change fermat-sample to 13", "fermat-sample を 13 に変える";
    FERMAT_EXTRAS_HINT: "delete the Tuples the Fermat owns that its spec no longer asks for (EXERCISE 3b in {file})",
        "Fermat が所有する Tuple のうち、spec がもう求めていないものを削除してください ({file} の演習 3b)";
    WHEN_FERMAT_CHANGED: "after changing fermat-sample to 13", "fermat-sample を 13 に変えたあと";
    STEP_DELETE_FERMAT: "delete Fermat fermat-19", "Fermat fermat-19 を削除する";
    FERMAT_GC_HINT: "the garbage collector deletes a Tuple whose controller ownerReference names the deleted Fermat's uid (EXERCISE 3a in {file}), then the Tuple's Numbers the same way (stage 2)",
        "ガベージコレクターは、コントローラーのオーナーリファレンスが削除された Fermat の uid を指す Tuple を消し ({file} の演習 3a)、同じようにしてその Tuple の Number も消します (ステージ 2)";
    WHEN_FERMAT_DELETED: "after deleting Fermat fermat-19 (garbage collection)",
        "Fermat fermat-19 を削除したあと (ガベージコレクション)";
    FERMAT_FOREGROUND_HINT: "a Fermat being deleted has a metadata.deletionTimestamp, and the given reconcile returns at once for it (`if fermat.metadata.deletion_timestamp.is_some()` in {file}): applying its Tuples again re-creates each one the garbage collector deletes",
        "削除中の Fermat には metadata.deletionTimestamp があり、用意された reconcile はそのまますぐに戻ります ({file} の `if fermat.metadata.deletion_timestamp.is_some()`)。Tuple をもう一度 apply すると、ガベージコレクターが消すたびに作り直してしまいます";
    FERMAT_SAYS: "its status says {got} for observedGeneration {observed}",
        "observedGeneration {observed} に対して status が {got} です";
    FERMAT_NO_STATUS: "Fermat {name} ({n}) has no status.twoSquaresFound {after}",
        "Fermat {name} ({n}) に status.twoSquaresFound がありません {after}";
    FERMAT_EXPECTED: "{want} for generation of the current spec", "今の spec の generation について {want}";
    FERMAT_WRONG_HINT: "decompositions lists x²+y² for each child Tuple [x², y²] with allSquares, smallest first; {hint}",
        "decompositions には、allSquares が true の子の Tuple [x², y²] ごとに x²+y² を小さい順に並べます。{hint}";

    // The runner (`make workshop-run`).
    RUNNING: "controllers running in {scope}; Ctrl-C stops them", "{scope}コントローラーを実行中です。Ctrl-C で止まります";
    SCOPE_NAMESPACE: "namespace {namespace}", "Namespace {namespace} を対象に";
    SCOPE_ALL: "every namespace", "すべての Namespace を対象に";
    TEST_SERVER_STARTED: "test API server on {url} with your CRDs installed; in another terminal:\n  export KUBECONFIG={kubeconfig}",
        "テスト用 API サーバーを {url} で起動し、自分の CRD をインストールしました。別のターミナルで:\n  export KUBECONFIG={kubeconfig}";
    RUN_WITHOUT_CLUSTER: "or run against a test API server of your own (ARGS=--test-server)",
        "または専用のテスト用 API サーバーで動かしてください (ARGS=--test-server)";
    CONTROLLER_STOPPED: "the {kind} controller stopped: {why}{others}. Fix it, then run again",
        "{kind} コントローラーが止まりました: {why}{others}。直してから、もう一度起動してください";
    OTHERS_KEEP_RUNNING: "; the other controllers keep running", "。ほかのコントローラーは動き続けます";
    STREAM_ENDED: "it returned (the controller's stream ended)", "戻ってきました (コントローラーのストリームが終わりました)";
    EXERCISE_TODO: "not yet implemented: EXERCISE {exercise} in {file}",
        "まだ書かれていない演習です: {file} の演習 {exercise}";
    PANIC_AT: "{message} (at {at})", "{message} (場所: {at})";
    EVERY_CONTROLLER_STOPPED: "every controller stopped: fix the code and run again",
        "すべてのコントローラーが止まりました。コードを直して、もう一度起動してください";
    STOPPED: "stopped: the {kinds} controller (see above)", "停止: {kinds} コントローラー (上を見てください)";
    AND: " and ", "と";
    CRD_NOT_INSTALLED: "the CRD {name} is not installed in the cluster of your kubeconfig: run `make workshop-install` (or make workshop-run ARGS=--test-server)",
        "CRD {name} が kubeconfig のクラスターにインストールされていません。`make workshop-install` を実行してください (または make workshop-run ARGS=--test-server)";
    CRD_OUTDATED: "the CRD {name} in the cluster is not the one {track} generate now: run `make workshop-install` again",
        "クラスターの CRD {name} は、{track}から今生成されるものと違います。もう一度 `make workshop-install` を実行してください";
    RECONCILE_FAILED: "reconcile failed; retrying in 1 s", "リコンサイルに失敗しました。1 秒後に再試行します";
    RECONCILED: "reconciled", "リコンサイルしました";
    WROTE: "wrote {path}", "{path} を書きました";
    INSTALL_WITHOUT_CLUSTER: "or use a test API server (make testserver, in a terminal of its own)",
        "またはテスト用 API サーバーを使ってください (専用のターミナルで make testserver)";
    COULD_NOT_RUN: "could not run {program}: {error} (is kubectl installed and on PATH?)",
        "{program} を実行できません: {error} (kubectl はインストールされ、PATH にありますか?)";
    KUBECTL_APPLY_FAILED: "kubectl apply failed (see above)", "kubectl apply が失敗しました (上を見てください)";
    KUBECTL_TIMEOUT: "kubectl did not answer within 60 s", "kubectl が 60 秒以内に応答しませんでした";

    // A room on a shared cluster: the check's namespace, the CRDs others use.
    CANNOT_READ_NAMESPACE: "cannot read namespace {name}: {said}", "Namespace {name} を読めません: 「{said}」";
    NAMESPACE_OF_OTHER: "namespace {name} belongs to the checks of participant {other}, not {participant}: it is left alone. Choose another name with PARTICIPANT=<your name> (make) or --participant",
        "Namespace {name} は {participant} ではなく参加者 {other} のチェックのものなので、触りません。PARTICIPANT=<自分の名前> (make) か --participant で別の名前を選んでください";
    NAMESPACE_NOT_A_CHECKS: "namespace {name} exists and was not created by a check: it is left alone. Choose another name with PARTICIPANT=<your name> (make) or --participant",
        "Namespace {name} はチェックが作ったものではないので、触りません。PARTICIPANT=<自分の名前> (make) か --participant で別の名前を選んでください";
    CANNOT_DELETE_EARLIER: "cannot delete your earlier check's namespace {name}: {said}",
        "前回のチェックの Namespace {name} を削除できません: 「{said}」";
    EARLIER_STILL_DELETING: "your earlier check's namespace {name} is still being deleted after 120 s (kubectl get namespace {name} -o yaml says why)",
        "前回のチェックの Namespace {name} が 120 秒たっても削除中のままです (理由は kubectl get namespace {name} -o yaml で分かります)";
    CANNOT_CREATE_NAMESPACE: "cannot create namespace {name}: {said}", "Namespace {name} を作れません: 「{said}」";
    NO_RIGHTS_FOR_CHECK_NAMESPACE: "your kubeconfig has no rights to create it on this cluster (403): the organiser runs `make workshop-room PARTICIPANTS={participant}` first (then PARTICIPANT={participant} uses workshop/room/{participant}.kubeconfig), or check with the kubeconfig the organiser gave you (export PARTICIPANT=<your name>)",
        "この kubeconfig には、このクラスターでこの Namespace を作る権限がありません (403)。主催者が先に `make workshop-room PARTICIPANTS={participant}` を実行するか (その後は PARTICIPANT={participant} で workshop/room/{participant}.kubeconfig が使われます)、主催者から受け取った自分の kubeconfig でチェックしてください (export PARTICIPANT=<自分の名前>)";
    NAMESPACE_NOT_DELETED: "could not delete the check's namespace", "チェックの Namespace を削除できませんでした";
    CANNOT_READ_CRD: "cannot read the CRD {name}: {said}", "CRD {name} を読めません: 「{said}」";
    CRD_OTHER_TYPES: "it was generated by math-workshop from other types: another participant's, or yours before an edit",
        "math-workshop がほかの型から生成したものです。ほかの参加者のものか、編集前の自分のもの";
    CRD_NOT_OURS: "it was not installed by math-workshop: the finished manager's, from `make install`?",
        "math-workshop がインストールしたものではありません。`make install` でインストールした完成版のマネージャーのもの?";
    CRD_USERS_UNKNOWN: "the CRD {name} in the cluster differs from yours ({whose}), and whether other namespaces have {kind}s cannot be told ({error})",
        "クラスターの CRD {name} は自分のものと違い ({whose})、ほかの Namespace に {kind} があるかどうか分かりません (「{error}」)";
    REPLACING_FORCED: "{why}: replacing it anyway (forced)", "{why}。それでも置き換えます (強制)";
    NOT_REPLACING: "{why}: not replacing it. On a cluster of your own, add FORCE=1 (make) or --force",
        "{why}。置き換えません。自分専用のクラスターなら FORCE=1 (make) か --force を付けてください";
    REPLACING_UNUSED: "replacing the CRD {name} ({whose}): no {kind} outside namespace {namespace} uses it",
        "CRD {name} を置き換えます ({whose})。Namespace {namespace} の外にこれを使う {kind} はありません";
    CRD_USED_ONE: "the CRD {name} in the cluster differs from yours ({whose}), and 1 {kind} in 1 other namespace uses it ({listed})",
        "クラスターの CRD {name} は自分のものと違い ({whose})、ほかの Namespace で {kind} 1 個が使っています ({listed})";
    CRD_USED: "the CRD {name} in the cluster differs from yours ({whose}), and {count} {kind}s in {namespaces} other namespaces use it ({listed})",
        "クラスターの CRD {name} は自分のものと違い ({whose})、ほかの {namespaces} 個の Namespace で {kind} {count} 個が使っています ({listed})";
    CRD_USED_IN_ONE: "the CRD {name} in the cluster differs from yours ({whose}), and {count} {kind}s in 1 other namespace use it ({listed})",
        "クラスターの CRD {name} は自分のものと違い ({whose})、ほかの Namespace で {kind} {count} 個が使っています ({listed})";
    REFUSING_INSTALL: "refusing to install your CRDs: {why}. Yours would change their schema for every controller that watches them. On a cluster of your own, add FORCE=1 (make) or --force",
        "自分の CRD のインストールを拒否しました: {why}。インストールすると、それをウォッチするすべてのコントローラーにとってスキーマが変わってしまいます。自分専用のクラスターなら FORCE=1 (make) か --force を付けてください";

    // A room on a shared cluster: each participant's namespace, signed writes (issue 29).
    ROOM_NEEDS_A_CLUSTER: "make workshop-room sets up the cluster of your kubeconfig, as its administrator",
        "make workshop-room は kubeconfig のクラスターを管理者としてセットアップします";
    ROOM_INSTALLS_NOTHING: "nothing installed: this is a room's shared cluster, and the organiser installed the CRDs (the reference solution's, the same schema as yours)",
        "何もインストールしません: ここは会場の共有クラスターで、CRD は主催者がインストール済みです (模範解答のもの。スキーマは自分のものと同じです)";
    ROOM_NOT_ALL_NAMESPACES: "not watching every namespace: this is a room's shared cluster; leave out ARGS=--all-namespaces to look after your own",
        "すべての Namespace はウォッチしません: ここは会場の共有クラスターです。ARGS=--all-namespaces を外すと自分の Namespace を担当します";
    ROOM_CRDS: "the room's CRDs are installed (by the organiser), namespace {namespace} emptied for the check",
        "会場の CRD はインストール済みです (主催者による)。チェックのために Namespace {namespace} を空にしました";
    ROOM_CRDS_NAMESPACE_MADE: "the room's CRDs are installed (by the organiser), namespace {namespace} created for the check (deleted at its end)",
        "会場の CRD はインストール済みです (主催者による)。チェックのために Namespace {namespace} を作りました (終わりに削除します)";
    STATUS_PARTICIPANT: "PARTICIPANT", "参加者";
    STATUS_STAGE: "STAGE", "ステージ";
    STATUS_RUNNER: "RUNNER", "ランナー";
    STATUS_WARNING: "LAST WARNING", "最後の Warning";
    STATUS_UP: "up ({seconds} s ago)", "動作中 ({seconds} 秒前)";
    STATUS_DOWN_FOR: "down for {seconds} s", "{seconds} 秒停止中";
    STATUS_NEVER: "never started", "未起動";
    CLI_ROOM_STATUS: "For the organiser: a live table of the room (stage reached, runner up, last Warning Event per participant).",
        "主催者向け: 会場の様子をライブで表示する (参加者ごとに到達したステージ、ランナーが動いているか、最後の Warning イベント)";
    ROOM_READY: "room ready on {described}: {count} participants; give each their workshop/room/<name>.kubeconfig",
        "{described} に会場を用意しました: 参加者 {count} 人。各自に workshop/room/<名前>.kubeconfig を渡してください";
    WHERE: "participant {participant}, namespace {namespace}", "参加者 {participant}、Namespace {namespace}";
    WHERE_NOT_KUBECTLS: "participant {participant}, namespace {namespace} (kubectl puts what you apply in {context}; to make it yours: kubectl config set-context --current --namespace {namespace})",
        "参加者 {participant}、Namespace {namespace} (kubectl が apply したものは {context} に入ります。自分の Namespace にするには: kubectl config set-context --current --namespace {namespace})";
    WHERE_ALL: "participant {participant}, every namespace", "参加者 {participant}、すべての Namespace";
    UNNAMED_CONTROLLER: "a controller that gives no name (the finished manager?)",
        "名前を名乗らないコントローラー (完成版のマネージャー?)";
    FOREIGN_OBJECTS: "another controller ({controllers}) looks after {count} of its objects: {objects}",
        "そのうち {count} 個のオブジェクトは別のコントローラー ({controllers}) が受け持っています: {objects}";
    RUN_LEAVES_ALONE: "namespace {namespace}: {foreign}. Your controllers leave them alone and do not start: work in a namespace of your own (NAMESPACE=<name>; in a room, export PARTICIPANT=<your name> to use your kubeconfig), or stop that controller",
        "Namespace {namespace}: {foreign}。自分のコントローラーはそれに触らず、起動しません。自分の Namespace で作業するか (NAMESPACE=<名前>。会場では export PARTICIPANT=<自分の名前> で自分の kubeconfig を使う)、そのコントローラーを止めてください";
    RUN_STOPS_FOR_OTHERS: "namespace {namespace}: {foreign}. Your controllers stop and leave them alone: work in a namespace of your own (NAMESPACE=<name>; in a room, export PARTICIPANT=<your name> to use your kubeconfig), or stop that controller",
        "Namespace {namespace}: {foreign}。自分のコントローラーは止まり、それに触りません。自分の Namespace で作業するか (NAMESPACE=<名前>。会場では export PARTICIPANT=<自分の名前> で自分の kubeconfig を使う)、そのコントローラーを止めてください";
    CANNOT_LOOK_FOR_OTHERS: "cannot tell whether another controller works in namespace {namespace}: {said}",
        "Namespace {namespace} でほかのコントローラーが動いているかどうか分かりません: 「{said}」";
    CRD_USED_HERE: "the CRD {name} in the cluster differs from yours ({whose}), and in your namespace {namespace}, {foreign}",
        "クラスターの CRD {name} は自分のものと違い ({whose})、自分の Namespace {namespace} では{foreign}";
    CLI_RUN_PARTICIPANT: "Who you are: your writes are signed math-workshop-<you> (default: user-host).",
        "自分の名前。書き込みのフィールドマネージャーを math-workshop-<自分> にする (既定: user-host)";
    CLI_INSTALL_NAMESPACE: "The namespace you work in, whose objects the CRD guard looks at too (default: as for run).",
        "作業する Namespace。CRD のガードはその中のオブジェクトも見る (既定: run と同じ)";

    // Connecting to the cluster.
    NO_KUBECONFIG: "no kubeconfig (KUBECONFIG is unset and ~/.kube/config does not exist)",
        "kubeconfig がありません (KUBECONFIG が未設定で、~/.kube/config もありません)";
    NO_USABLE_KUBECONFIG: "no usable kubeconfig at KUBECONFIG={path} ({cause})",
        "KUBECONFIG={path} に使える kubeconfig がありません (「{cause}」)";
    START_A_CLUSTER: "{missing}: start minikube or kind (they write one), {instead}",
        "{missing}。minikube か kind を起動するか (どちらも kubeconfig を書きます)、{instead}";
    KUBECONFIG_UNUSABLE: "the kubeconfig ({paths}) cannot be used: {cause}; {instead}",
        "kubeconfig ({paths}) を使えません: 「{cause}」。{instead}";
    NO_CLIENT: "cannot make a client for {described}: {cause}", "{described} のクライアントを作れません: 「{cause}」";
    DOES_NOT_ANSWER: "the cluster of your kubeconfig ({described}) does not answer: {cause}. {start}, {instead}",
        "kubeconfig のクラスター ({described}) が応答しません: 「{cause}」。{start}。{instead}";
    DID_NOT_ANSWER: "the cluster of your kubeconfig ({described}) did not answer within 10 s. {start}, {instead}",
        "kubeconfig のクラスター ({described}) が 10 秒以内に応答しませんでした。{start}。{instead}";
    START_TEST_SERVER: "Is the test API server still running? Start it again ({command})",
        "テスト用 API サーバーはまだ動いていますか? もう一度起動してください ({command})";
    START_MINIKUBE: "Start it (minikube start)", "起動してください (minikube start)";
    START_KIND: "Start it (docker start {name}-control-plane)", "起動してください (docker start {name}-control-plane)";
    START_ANY: "Start it (minikube start, or docker start <name>-control-plane for kind)",
        "起動してください (minikube start、kind なら docker start <name>-control-plane)";

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
        "参加者の名前 (英小文字、数字、ダッシュ)";
    CLI_RUN_ALL_NAMESPACES: "Look after every namespace, like kubebuilder's `make run` (a cluster of your own).",
        "kubebuilder の `make run` のように、すべての Namespace を受け持つ (自分専用のクラスター向け)";
    CLI_CHECK: "Check stage N: ✓ or ✗ per expectation, with hints; exits non-zero on any ✗.",
        "ステージ N をチェックする: 項目ごとに ✓ か ✗ とヒント。✗ が一つでもあれば終了コードは 0 以外";
    CLI_CHECK_STAGE: "The stage to check (1 Number, 2 Tuple, 3 Fermat).",
        "チェックするステージ (1 Number、2 Tuple、3 Fermat)";
    CLI_CHECK_CLUSTER: "Use the cluster of the current kubeconfig instead of a fresh test API server, in the namespace math-workshop-check-<participant>.",
        "新しいテスト用 API サーバーの代わりに現在の kubeconfig のクラスターを使う (Namespace は math-workshop-check-<participant>)";
    CLI_PARTICIPANT: "Who you are, for the namespace of --cluster checks (default: user-host).",
        "自分の名前。--cluster のチェックの Namespace に使う (既定: user-host)";
    CLI_CHECK_FORCE: "With --cluster: install the CRDs even over different ones that others use.",
        "--cluster のとき: ほかの人が使う別の CRD があっても、CRD をインストールする";
    CLI_CHECK_TIMEOUT: "Seconds each expectation may take (default: 10 on the test server, 30 on a cluster).",
        "1 項目にかけてよい秒数 (既定: テスト用 API サーバーで 10、クラスターで 30)";
    CLI_TOOLS: "Watch and skip, for the learner track.", "学習トラックのための watch と skip";
    CLI_WATCH: "Build and check a stage, and again on every save of an exercise file (Rustlings-style).",
        "ステージをビルドしてチェックし、演習ファイルを保存するたびにやり直す (Rustlings 風)";
    CLI_WATCH_STAGE: "The stage to check first (1 Number, 2 Tuple, 3 Fermat); the next one once it passes.",
        "最初にチェックするステージ (1 Number、2 Tuple、3 Fermat。既定は 1)。合格したら次へ進む";
    CLI_WATCH_CLUSTER: "Check on the cluster of the current kubeconfig instead of a private test API server.",
        "専用のテスト用 API サーバーの代わりに、現在の kubeconfig のクラスターでチェックする";
    CLI_WATCH_PARTICIPANT: "With --cluster: who you are (the namespace math-workshop-check-<participant>).",
        "--cluster のとき: 自分の名前 (Namespace は math-workshop-check-<participant>)";
    CLI_WATCH_TIMEOUT: "Seconds each expectation of a check may take.",
        "チェックの 1 項目にかけてよい秒数";
    CLI_SKIP: "Catch up: put the reference solution of stage N in workshop/src/exercises/ (yours is kept beside it as <file>.rs.mine), to go on with stage N+1 in your own code.",
        "追いつく: ステージ N の模範解答を workshop/src/exercises/ に置き (自分のものは <file>.rs.mine として隣に残る)、ステージ N+1 を自分のコードで続ける";
    CLI_SKIP_STAGE: "The stage to take the reference solution of (1 Number, 2 Tuple, 3 Fermat).",
        "模範解答を使うステージ (1 Number、2 Tuple、3 Fermat)";
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
    CLI_DID_YOU_MEAN: " (did you mean {suggested}?)", " ({suggested} のことですか?)";
    CLI_SEE_HELP: "; --help shows the usage", "。使い方は --help で表示できます";

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
    DOCTOR_CARGO_PATH: "✗ Rust is installed in ~/.cargo/bin, but that folder is not on your PATH; run: . \"$HOME/.cargo/env\" (or open a new terminal)",
        "✗ Rust は ~/.cargo/bin にインストールされていますが、そのディレクトリが PATH に入っていません。実行してください: . \"$HOME/.cargo/env\" (または新しいターミナルを開きます)";
    DOCTOR_PREPARED: "workshop-prepare: done in {minutes} min {seconds} s, {total} of disk (target/ {target}, crates in ~/.cargo {crates}); the workshop now runs without network",
        "workshop-prepare: 完了しました ({minutes} 分 {seconds} 秒、ディスク {total}: target/ が {target}、~/.cargo のクレートが {crates})。これでワークショップはネットワークなしで動きます";
    DOCTOR_KUBECTL_UNTESTED: "! kubectl {version} works, but the guide's outputs were tested with kubectl 1.32 to 1.36: some lines may read otherwise",
        "! kubectl {version} は使えますが、ガイドの出力は kubectl 1.32〜1.36 で確かめたものです。表示が少し違う行があるかもしれません";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locale_picks_japanese_in_gettexts_order_and_the_flag_wins() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(detect(None, env(&[("LANG", "ja_JP.UTF-8")])), Lang::Ja);
        assert_eq!(
            detect(None, env(&[("LC_ALL", "C"), ("LANG", "ja_JP.UTF-8")])),
            Lang::En
        );
        assert_eq!(
            detect(None, env(&[("LC_ALL", ""), ("LC_MESSAGES", "ja_JP")])),
            Lang::Ja
        );
        assert_eq!(detect(Some("ja"), env(&[("LANG", "C")])), Lang::Ja);
        assert_eq!(detect(Some("en"), env(&[("LANG", "ja_JP")])), Lang::En);
        assert_eq!(detect(None, env(&[])), Lang::En);
    }

    /// The `{name}`s of a template, sorted.
    fn placeholders(template: &str) -> Vec<&str> {
        let mut names: Vec<&str> = template
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .collect();
        names.sort_unstable();
        names
    }

    fn japanese(text: &str) -> bool {
        text.chars()
            .any(|c| matches!(c, '\u{3040}'..='\u{30ff}' | '\u{4e00}'..='\u{9fff}'))
    }

    /// What is left of a template without its placeholders: words to translate, if any.
    fn words(template: &str) -> bool {
        let mut rest = template.to_string();
        for name in placeholders(template) {
            rest = rest.replace(&format!("{{{name}}}"), "");
        }
        rest.chars().any(|c| c.is_ascii_alphabetic())
    }

    #[test]
    fn every_message_has_both_languages_with_the_same_placeholders() {
        let mut wrong = Vec::new();
        for msg in ALL {
            if msg.en.trim().is_empty() || msg.ja.trim().is_empty() {
                wrong.push(format!("{}: a language is empty", msg.key));
            }
            if placeholders(msg.en) != placeholders(msg.ja) {
                wrong.push(format!(
                    "{}: placeholders {:?} in English, {:?} in Japanese",
                    msg.key,
                    placeholders(msg.en),
                    placeholders(msg.ja)
                ));
            }
            if japanese(msg.en) {
                wrong.push(format!("{}: the English text has Japanese in it", msg.key));
            }
            if words(msg.en) && !japanese(msg.ja) {
                wrong.push(format!("{}: the Japanese text is not Japanese", msg.key));
            }
        }
        let mut keys: Vec<&str> = ALL.iter().map(|m| m.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), ALL.len(), "a key is defined twice");
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn a_message_is_filled_in_the_language_asked() {
        let args: &[(&str, &dyn Display)] = &[("passed", &1), ("failed", &11)];
        assert_eq!(SUMMARY.render(Lang::En, args), "1 passed, 11 failed");
        assert_eq!(SUMMARY.render(Lang::Ja, args), "合格 1 件、不合格 11 件");
    }
}
