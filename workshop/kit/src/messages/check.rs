//! The check (`make workshop-check`): its frame, what the stages share, and each stage's
//! expectations and hints.

use super::Msg;

messages! {
    CHECK;

    // The check: its frame.
    STAGE_HEADER: "Stage {stage}: {kind} — {track}, {file}, on {on}",
        "ステージ {stage}: {kind} — {track} ({file})、{on}で実行";
    ON_TEST_SERVER: "the test API server", "テスト用 API サーバー";
    ON_CLUSTER: "{cluster}, namespace {namespace} (participant {participant})",
        "{cluster} の Namespace {namespace} (参加者 {participant})";
    TRACK_EXERCISES: "your exercises", "自分の演習";
    TRACK_SOLUTIONS: "the reference solutions", "模範解答";
    SUMMARY: "{passed} passed, {failed} failed", "合格 {passed} 件、不合格 {failed} 件";
    STAGE_ZERO_CHECK: "Stage 0 (define the API: exercise 1a in {file}) has no check of its own: make workshop-check STAGE=1 checks it with its first two lines, then the Number controller of exercise 1b",
        "ステージ 0 (API の定義: {file} の演習 1a) には専用のチェックがありません。make workshop-check STAGE=1 の最初の 2 行がこれを確かめ、そのあと演習 1b の Number コントローラーを確かめます";
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
        "クラスターにつながりますか (kubectl get namespaces)？ CRD を生成できますか (cargo run --profile workshop -p math-workshop -- crds)？";
    CRD_NOT_ESTABLISHED: "crd/{name} is not Established (the API server does not serve its kind yet)",
        "crd/{name} が Established になっていません (API サーバーがまだその Kind を扱っていません)";
    CRDS_INSTALLED: "installed the CRDs generated from {track} (kubectl apply), namespace {namespace}",
        "{track}から生成した CRD をインストールした (kubectl apply)。Namespace は {namespace}";
    CRDS_ALREADY: "the CRDs generated from {track} are installed already, namespace {namespace}",
        "{track}から生成した CRD はインストール済み。Namespace は {namespace}";
    REACHABLE: "is the cluster reachable (kubectl get namespaces)?",
        "クラスターにつながりますか (kubectl get namespaces)？";
    APPLY_FAILED_ABOVE: "its kubectl apply failed above", "上の kubectl apply が失敗しています";

    // The check: what the stages share.
    NONE: "none", "なし";
    LIST_SEPARATOR: ", ", "、";
    MISSING: "missing: {names}", "{names} がありません";
    HAS_SPEC: "{name} has spec {spec}", "{name} の spec が {spec} です";
    CHILDREN: "{parent_kind} {parent} has its {count} {child_kind}s ({names}) with the desired specs",
        "{parent_kind} {parent} の spec どおりの {child_kind} が {count} 個ある ({names})";
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
        "{step}: {kind} {names} が一度も現れませんでした";
    DID_NOT_COME_BACK: "cannot {step}: {kind}s {names} did not come back after the kubectl delete above",
        "{step}: {kind} {names} が上の kubectl delete のあと戻ってきませんでした";
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

    // The check: what `kubectl get -w` showed during a stage (stages/watched.rs).
    WATCH_RIGHT: "every status kubectl get {plurals} -w showed for its object's current generation was right",
        "kubectl get {plurals} -w に現れた status は、どれもその時点の generation に対して正しい";
    WATCH_WRONG: "kubectl get {plural} -w showed {kind} {name} {spec} with {given} for its current generation {generation}{cause}; the right answer is {right}",
        "kubectl get {plural} -w に、{kind} {name} {spec} の今の generation {generation} に対する status として {given} が現れました{cause}。正しい答えは {right} です";
    CAUSE_UNANSWERED: " before {kind} {name} had answered", " ({kind} {name} の status がまだ書かれていないときです)";
    CAUSE_STALE: ", from {kind} {name}'s status for an older spec (observedGeneration {observed}, generation {generation})",
        " ({kind} {name} の古い spec に対する status から計算しています。observedGeneration {observed}、generation {generation})";
    CAUSE_COMPUTED: ", with every child's answer in", " (子の status はすべてそろっていました)";
    EARLY_HINT: "write the status only once every child {child_kind} has answered for its current spec (status.observedGeneration = metadata.generation); until then write nothing and return Ok(()): with no answers yet, `all` of an empty list is true (EXERCISE {exercise} in {file})",
        "status を書くのは、子の {child_kind} すべての status が今の spec に追いついてから (status.observedGeneration = metadata.generation) にしてください。それまでは何も書かずに Ok(()) を返します。答えがまだ 1 つもないと、空のリストの `all` は true になります ({file} の演習 {exercise})";
    STALE_HINT: "a {child_kind}'s status counts only when its observedGeneration is its metadata.generation: an answer for its older spec answers another question (EXERCISE {exercise} in {file})",
        "{child_kind} の status を使ってよいのは、その observedGeneration が metadata.generation と等しいときだけです。古い spec に対する答えは、別の問いへの答えです ({file} の演習 {exercise})";
    LOOP_NONE: "no {child_kind} was created over and over (kubectl get {plural} -w: each once, and once more after a kubectl delete)",
        "何度も作り直された {child_kind} はない (kubectl get {plural} -w で、どれも 1 回、kubectl delete のあとにもう 1 回だけ)";
    LOOP: "{child_kind}s created over and over: kubectl get {plural} -w showed {names}",
        "{child_kind} が何度も作り直されています: kubectl get {plural} -w で {names}";
    LOOP_HINT: "kubectl get {plural} -w showed {names} created over and over: something deletes the {child_kind}s the {parent_kind} applies, and each deletion wakes it to apply them again; delete only the {child_kind}s the {parent_kind}'s spec no longer lists (EXERCISE {exercise} in {file})",
        "kubectl get {plural} -w で {names} が何度も作られています。{parent_kind} が apply した {child_kind} を何かが削除し、削除のたびにリコンサイルが呼ばれて、また apply しています。削除するのは、{parent_kind} の spec にもう載っていない {child_kind} だけにしてください ({file} の演習 {exercise})";
    FORCE_FIRST_HINT: "the API server refused the {kind}'s apply with 409 Conflict: since the hand edit, another field manager owns the field; apply with .force() to take it back (PatchParams::apply(MANAGER).force(), EXERCISE {exercise} in {file})",
        "API サーバーが {kind} の apply を 409 Conflict で拒否しました。手で書き換えたあとは、そのフィールドは別のフィールドマネージャーのものです。.force() 付きで apply して取り戻してください (PatchParams::apply(MANAGER).force()、{file} の演習 {exercise})";
    STATUS_BEHIND: "its status still answers generation {observed} ({got}); the spec is at generation {generation}",
        "status はまだ generation {observed} に対する答え ({got}) のままで、spec は generation {generation} です";
    BEHIND_HINT: "write the status for the current spec on every reconcile, with observed_generation from the {kind}'s own metadata.generation (EXERCISE {exercise} in {file})",
        "リコンサイルのたびに、今の spec に対する status を書いてください。observed_generation は {kind} 自身の metadata.generation から取ります ({file} の演習 {exercise})";

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
        "NumberSpec に `pub value: i64` はありますか (演習 1a)？ CRD はそこから生成されます";
    NOT_EXIST: "{kind} {name} does not exist", "{kind} {name} が存在しません";
    NUMBER_EXPECTED: "fizzBuzz {fizz}, isSquare {square}, isPrime {prime}",
        "fizzBuzz は {fizz}、isSquare は {square}、isPrime は {prime}";
    NUMBER_SAYS: "its status says {got} for value {value}", "値 {value} に対して status が {got} です";
    GENERATION_BEHIND: "status.observedGeneration is {observed}, not metadata.generation {generation}",
        "status.observedGeneration が {observed} で、metadata.generation の {generation} と違います";
    NUMBER_NO_STATUS: "{subject} has no status.fizzBuzz {after}", "{subject} に status.fizzBuzz がありません {after}";
    NUMBER_NO_STATUS_HINT: "did you patch the status subresource (Api::patch_status), not the object? (EXERCISE 1b in {file})",
        "オブジェクト本体ではなく、ステータスサブリソースにパッチしましたか (Api::patch_status)？ ({file} の演習 1b)";
    NUMBER_WRONG_HINT: "compute every field from the current spec.value on each reconcile (crate::math::fizzbuzz, is_square, is_prime) and set observed_generation from metadata.generation (EXERCISE 1b in {file})",
        "リコンサイルのたびに、今の spec.value からすべてのフィールドを計算し (crate::math::fizzbuzz、is_square、is_prime)、observed_generation は metadata.generation から取ってください ({file} の演習 1b)";

    // The check: stage 2.
    TUPLE_CRD_HINT: "is the Tuple CRD installed?", "Tuple の CRD はインストールされていますか？";
    TUPLE_CREATE_HINT: "create one Number per item, named <tuple>-<index>, with Api::patch(.., &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number)) (EXERCISE 2a in {file})",
        "要素ごとに <tuple>-<index> という名前の Number を、Api::patch(.., &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number)) で 1 つずつ作ってください ({file} の演習 2a)";
    TUPLE_OWNER_HINT: "set number.metadata.owner_references to the Tuple's controller_owner_ref(&()), with block_owner_deletion: Some(true) (EXERCISE 2a in {file}): the garbage collector and .owns() follow it",
        "number.metadata.owner_references に Tuple の controller_owner_ref(&()) を block_owner_deletion: Some(true) 付きで入れてください ({file} の演習 2a)。ガベージコレクターも .owns() もこれをたどります";
    TUPLE_STATUS_HINT: "once every child Number's status describes its current spec (status.observedGeneration = metadata.generation), write TupleStatus with patch_status (EXERCISE 2c in {file}); are you woken when a Number's status changes (.owns, EXERCISE 2d)? Do the Numbers get a status (stage 1)?",
        "子の Number の status がすべて今の spec のもの (status.observedGeneration = metadata.generation) になったら、patch_status で TupleStatus を書いてください ({file} の演習 2c)。Number の status が変わったときに、Tuple のリコンサイルは呼ばれていますか (.owns、演習 2d)？ Number に status は付いていますか (ステージ 1)？";
    TUPLE_NOT_WOKEN_HINT: "every Number of the Tuple has answered, yet the Tuple wrote no status: is it woken when a Number's status changes? Add .owns(ctx.watched::<Number>(), watcher::Config::default()) to its Controller (EXERCISE 2d in {file}); once every child has answered, write TupleStatus with patch_status (EXERCISE 2c)",
        "Tuple の Number はすべて status を書き終えたのに、Tuple の status が書かれていません。Number の status が変わったときに、Tuple のリコンサイルは呼ばれていますか？ Controller に .owns(ctx.watched::<Number>(), watcher::Config::default()) を追加してください ({file} の演習 2d)。子の status がすべてそろったら、patch_status で TupleStatus を書きます (演習 2c)";
    TUPLE_OWNS_HINT: "add .owns(ctx.watched::<Number>(), watcher::Config::default()) to the Tuple's Controller (EXERCISE 2d in {file}): without it, nothing tells the Tuple that its Number changed",
        "Tuple の Controller に .owns(ctx.watched::<Number>(), watcher::Config::default()) を追加してください ({file} の演習 2d)。これがないと、Number が変わったことを Tuple に伝えるものがありません";
    FORCE_HINT: "{hint}; and apply the whole desired child with .force() on every reconcile (EXERCISE {exercise})",
        "{hint}。また、リコンサイルのたびに望ましい子をまるごと .force() 付きで apply してください (演習 {exercise})";
    TUPLE_PUT_BACK: "Number tuple-sample-2 is put back to value 2 after the hand edit",
        "手で書き換えた Number tuple-sample-2 が値 2 に戻る";
    STEP_SHRINK: "shrink tuple-sample to [2]", "tuple-sample を [2] に縮められません";
    TUPLE_EXTRAS_HINT: "delete the Numbers the Tuple owns that its spec no longer lists (EXERCISE 2b in {file})",
        "Tuple が所有する Number のうち、spec にもう載っていないものを削除してください ({file} の演習 2b)";
    WHEN_SHRUNK: "after shrinking tuple-sample to [2]", "tuple-sample を [2] に縮めたあと";
    STEP_DELETE_TUPLE: "delete Tuple tuple-sample", "Tuple tuple-sample を削除できません";
    TUPLE_GC_HINT: "the garbage collector deletes a Number whose controller ownerReference names the deleted Tuple's uid: set it with controller_owner_ref (EXERCISE 2a in {file})",
        "ガベージコレクターは、コントローラーのオーナーリファレンスが削除された Tuple の uid を指す Number を消します。controller_owner_ref で設定してください ({file} の演習 2a)";
    WHEN_TUPLE_DELETED: "after deleting Tuple tuple-sample (garbage collection)",
        "Tuple tuple-sample を削除したあと (ガベージコレクション)";
    TUPLE_FOREGROUND_HINT: "a Tuple being deleted has a metadata.deletionTimestamp, and the given reconcile returns at once for it (`if tuple.metadata.deletion_timestamp.is_some()` in {file}): applying its children again re-creates each one the garbage collector deletes",
        "削除中の Tuple には metadata.deletionTimestamp があり、用意された reconcile はそのまますぐに戻ります ({file} の `if tuple.metadata.deletion_timestamp.is_some()`)。子をもう一度 apply すると、ガベージコレクターが消すたびに作り直してしまいます";
    TUPLE_ALL_SQUARES: "Tuple {name}: allSquares {all_squares}, for its current generation",
        "Tuple {name}: 今の generation に対する allSquares は {all_squares}";
    TUPLE_SAYS: "status.allSquares is {got} for observedGeneration {observed} (generation {generation})",
        "observedGeneration {observed} (generation {generation}) に対して status.allSquares が {got} です";
    TUPLE_NO_STATUS: "Tuple {name} has no status.allSquares {after}", "Tuple {name} に status.allSquares がありません {after}";
    TUPLE_EXPECTED: "allSquares {all_squares}", "allSquares が {all_squares}";
    TUPLE_WRONG_HINT: "allSquares is true exactly when every child Number's status.isSquare is; {hint}",
        "allSquares が true になるのは、子の Number の status.isSquare がすべて true のときだけです。{hint}";

    // The check: stage 3.
    FERMAT_CRD_HINT: "is the Fermat CRD installed?", "Fermat の CRD はインストールされていますか？";
    FERMAT_CREATE_HINT: "create one Tuple [a, n-a] per a in 1..=n/2, named <fermat>-<a>-and-<n-a>, with Api::patch and Patch::Apply (EXERCISE 3a in {file})",
        "1..=n/2 の a ごとに、<fermat>-<a>-and-<n-a> という名前の Tuple [a, n-a] を Api::patch と Patch::Apply で作ってください ({file} の演習 3a)";
    FERMAT_OWNER_HINT: "set tuple.metadata.owner_references to the Fermat's controller_owner_ref(&()), with block_owner_deletion: Some(true) (EXERCISE 3a in {file})",
        "tuple.metadata.owner_references に Fermat の controller_owner_ref(&()) を block_owner_deletion: Some(true) 付きで入れてください ({file} の演習 3a)";
    FERMAT_STATUS_HINT: "once every child Tuple's status describes its current spec, write FermatStatus with patch_status (EXERCISE 3c in {file}); are you woken when a Tuple changes (.owns, EXERCISE 3d)? Do the Tuples get allSquares (stage 2)?",
        "子の Tuple の status がすべて今の spec のものになったら、patch_status で FermatStatus を書いてください ({file} の演習 3c)。Tuple が変わったときに、Fermat のリコンサイルは呼ばれていますか (.owns、演習 3d)？ Tuple に allSquares は付いていますか (ステージ 2)？";
    FERMAT_NOT_WOKEN_HINT: "every Tuple of the Fermat has answered, yet the Fermat wrote no status: is it woken when a Tuple's status changes? Add .owns(ctx.watched::<Tuple>(), watcher::Config::default()) to its Controller (EXERCISE 3d in {file}); once every child has answered, write FermatStatus with patch_status (EXERCISE 3c)",
        "Fermat の Tuple はすべて status を書き終えたのに、Fermat の status が書かれていません。Tuple の status が変わったときに、Fermat のリコンサイルは呼ばれていますか？ Controller に .owns(ctx.watched::<Tuple>(), watcher::Config::default()) を追加してください ({file} の演習 3d)。子の status がすべてそろったら、patch_status で FermatStatus を書きます (演習 3c)";
    FERMAT_OWNS_HINT: "add .owns(ctx.watched::<Tuple>(), watcher::Config::default()) to the Fermat's Controller (EXERCISE 3d in {file})",
        "Fermat の Controller に .owns(ctx.watched::<Tuple>(), watcher::Config::default()) を追加してください ({file} の演習 3d)";
    STEP_CHANGE_FERMAT: "change fermat-sample to 13", "fermat-sample を 13 に変更できません";
    FERMAT_EXTRAS_HINT: "delete the Tuples the Fermat owns that its spec no longer asks for (EXERCISE 3b in {file})",
        "Fermat が所有する Tuple のうち、spec がもう求めていないものを削除してください ({file} の演習 3b)";
    WHEN_FERMAT_CHANGED: "after changing fermat-sample to 13", "fermat-sample を 13 に変えたあと";
    STEP_DELETE_FERMAT: "delete Fermat fermat-19", "Fermat fermat-19 を削除できません";
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
}
