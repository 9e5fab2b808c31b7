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
        "workshop/src/exercises/ を監視しています。保存するとチェックし直し、Enter ですぐチェック、Ctrl-C で終了します。";
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
        "✗ ステージ {stage} はまだ合格していません。保存から {total} 秒 (ビルド {build} 秒、チェック {check} 秒)";
    WATCH_PASSED_NOW: "✓ passed stage {stage} in {total} s (build {build} s, check {check} s)",
        "✓ ステージ {stage} 合格。{total} 秒 (ビルド {build} 秒、チェック {check} 秒)";
    WATCH_NOT_YET_NOW: "✗ not yet: stage {stage} in {total} s (build {build} s, check {check} s)",
        "✗ ステージ {stage} はまだ合格していません。{total} 秒 (ビルド {build} 秒、チェック {check} 秒)";
    STAGE_ZERO_WATCH: "Stage 0 (define the API: exercise 1a in workshop/src/exercises/number.rs) has no check of its own: stage 1's first two lines check it, so the watch checks stage 1.",
        "ステージ 0 (API の定義: workshop/src/exercises/number.rs の演習 1a) には専用のチェックがありません。ステージ 1 のチェックの最初の 2 行が確かめるので、ステージ 1 をチェックします。";
    STAGE_ZERO_SKIP: "stage 0 has no file of its own: make workshop-skip STAGE=1 takes the reference number.rs (exercises 1a and 1b)",
        "ステージ 0 だけのファイルはありません。make workshop-skip STAGE=1 で number.rs (演習 1a と 1b) が模範解答になります";
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
    HINT_HEADING: "Exercise {exercise} ({file}, {item}), hint {n} of {count}:",
        "演習 {exercise} ({file} の {item})、ヒント {n}/{count}:";
    HINT_CODE_HEADING: "Exercise {exercise} ({file}, {item}), hint {n} of {count}: the complete code, as {solution} has it, after the use lines your file still lacks for it:",
        "演習 {exercise} ({file} の {item})、ヒント {n}/{count}: 完成したコードです。{solution} にあるとおりで、自分のファイルにまだない、このコードに必要な use を先に付けています:";
    HINT_NEXT: "Try it. Still stuck? make workshop-hint STAGE={stage} again shows hint {next} of {count} (the complete code); ALL=1 shows every hint of the stage at once.",
        "まず試してみましょう。それでも進めなければ、もう一度 make workshop-hint STAGE={stage} でヒント {next}/{count} (完成したコード) が出ます。ALL=1 を付けるとステージのヒントをすべて表示します。";
    HINT_LAST: "That was the last hint of exercise {exercise}. Once it is written (its starter gone), make workshop-hint STAGE={stage} goes on with the next exercise; make workshop-check STAGE={stage} says what is still wrong.",
        "これが演習 {exercise} の最後のヒントです。書き終えたら (最初の todo!() などがなくなれば)、make workshop-hint STAGE={stage} は次の演習に進みます。まだ何が違うかは make workshop-check STAGE={stage} で分かります。";
    HINT_ALL_WRITTEN: "Every exercise of stage {stage} is written (no todo!() left): make workshop-check STAGE={stage} says what is still wrong; ALL=1 shows every hint of the stage.",
        "ステージ {stage} の演習はすべて書かれています (todo!() は残っていません)。まだ何が違うかは make workshop-check STAGE={stage} で分かります。ALL=1 でステージのヒントをすべて表示します。";
    HINT_1A: "NumberSpec gets its one field, `pub value: i64`: what the user declares. NumberStatus gets what the controller observes: `observed_generation: i64` (which generation of the spec the status describes), `fizz_buzz: String`, `is_square: bool`, `is_prime: bool`. Leave the derives and #[serde(rename_all = \"camelCase\")] as they are: the CRD is generated from them (make workshop-crds writes it; look for spec.value and status.fizzBuzz).",
        "NumberSpec にはフィールドを 1 つ、`pub value: i64` を足します。利用者が宣言するものです。NumberStatus にはコントローラーが観測したものを足します: `observed_generation: i64` (status がどの generation の spec に対するものか)、`fizz_buzz: String`、`is_square: bool`、`is_prime: bool`。derive と #[serde(rename_all = \"camelCase\")] はそのままにします。CRD はここから生成されます (make workshop-crds で書き出し、spec.value と status.fizzBuzz を探してみてください)。";
    HINT_1B: "Three steps in reconcile. Compute a NumberStatus from number.spec.value with crate::math::fizzbuzz, is_square and is_prime, and observed_generation from number.metadata.generation.unwrap_or_default(). Make an Api<Number> for the Number's namespace: Api::namespaced(ctx.client.clone(), &number.namespace().unwrap_or_default()). Write the status with server-side apply to the status subresource: numbers.patch_status(&number.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(json!({ \"apiVersion\": \"math.example.com/v1beta1\", \"kind\": \"Number\", \"status\": status }))).await?, then return Ok(Action::await_change()).",
        "reconcile の中は 3 段階です。number.spec.value から crate::math::fizzbuzz、is_square、is_prime で NumberStatus を作り、observed_generation は number.metadata.generation.unwrap_or_default() にします。Number の Namespace の Api<Number> を作ります: Api::namespaced(ctx.client.clone(), &number.namespace().unwrap_or_default())。ステータスサブリソースに Server-Side Apply で書き込みます: numbers.patch_status(&number.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(json!({ \"apiVersion\": \"math.example.com/v1beta1\", \"kind\": \"Number\", \"status\": status }))).await?。最後に Ok(Action::await_change()) を返します。";
    HINT_2A: "The owner first: let owner = OwnerReference { block_owner_deletion: Some(true), ..tuple.controller_owner_ref(&()).ok_or(Error::Missing(\"uid\"))? }. Then for each (index, value) in tuple.spec.numbers.iter().enumerate(): let mut number = Number::new(&child_name(&tuple.name_any(), index), NumberSpec { value: *value }); number.metadata.owner_references = Some(vec![owner.clone()]); apply it with numbers.patch(&number.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number)).await?, and push what patch returns (the child as stored, with its status) into the Vec you return.",
        "まずオーナーです: let owner = OwnerReference { block_owner_deletion: Some(true), ..tuple.controller_owner_ref(&()).ok_or(Error::Missing(\"uid\"))? }。次に tuple.spec.numbers.iter().enumerate() の (index, value) ごとに: let mut number = Number::new(&child_name(&tuple.name_any(), index), NumberSpec { value: *value }); number.metadata.owner_references = Some(vec![owner.clone()]); それを numbers.patch(&number.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number)).await? で apply し、patch が返したもの (保存された子、status 付き) を、返す Vec に push します。";
    HINT_2B: "let wanted: Vec<String> = children.iter().map(|n| n.name_any()).collect(). Then for number in numbers.list(&ListParams::default()).await?: it is this Tuple's when number.owner_references().iter().any(|o| Some(&o.uid) == tuple.uid().as_ref()); if it is ours and !wanted.contains(&number.name_any()), numbers.delete(&number.name_any(), &DeleteParams::default()).await?.",
        "let wanted: Vec<String> = children.iter().map(|n| n.name_any()).collect() を作ります。次に numbers.list(&ListParams::default()).await? の number ごとに: number.owner_references().iter().any(|o| Some(&o.uid) == tuple.uid().as_ref()) ならこの Tuple のものです。自分のもので、しかも !wanted.contains(&number.name_any()) なら、numbers.delete(&number.name_any(), &DeleteParams::default()).await? で削除します。";
    HINT_2C: "Collect each child's answer into an Option<Vec<bool>>: Some(s.is_square) when its status s exists and Some(s.observed_generation) == n.metadata.generation, else None; collect() gives None as soon as one child is None. On None, return Ok(()) and write nothing (its status change wakes the Tuple again). Otherwise write TupleStatus { observed_generation: tuple.metadata.generation.unwrap_or_default(), all_squares: answers.iter().all(|square| *square) } with patch_status, as in 1b, with \"kind\": \"Tuple\".",
        "子の答えを Option<Vec<bool>> に集めます: status s があり Some(s.observed_generation) == n.metadata.generation なら Some(s.is_square)、そうでなければ None です。collect() は、None の子が 1 つでもあれば None になります。None なら何も書かずに Ok(()) を返します (その子の status が変わると、また Tuple のリコンサイルが呼ばれます)。そうでなければ TupleStatus { observed_generation: tuple.metadata.generation.unwrap_or_default(), all_squares: answers.iter().all(|square| *square) } を、1b と同じく patch_status で (\"kind\": \"Tuple\") 書き込みます。";
    HINT_2D: "In run, between Controller::new(tuples, watcher::Config::default()) and .run(…), add the line .owns(ctx.watched::<Number>(), watcher::Config::default()): a watch on Numbers, each change mapped to the Tuple its ownerReference names.",
        "run の中の Controller::new(tuples, watcher::Config::default()) と .run(…) の間に .owns(ctx.watched::<Number>(), watcher::Config::default()) の 1 行を足します。Number をウォッチし、変更をそのオーナーリファレンスが指す Tuple に結び付けます。";
    HINT_3A: "As 2a, one Tuple per pair: the owner from fermat.controller_owner_ref(&()) with block_owner_deletion: Some(true); for (a, b) in math::fermat_splits(fermat.spec.number): let mut tuple = Tuple::new(&child_name(&fermat.name_any(), a, b), TupleSpec { numbers: vec![a, b] }), its owner_references set, applied with tuples.patch(…, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&tuple)).await?, and what patch returns pushed.",
        "2a と同じく、組ごとに Tuple を 1 つ作ります。オーナーは fermat.controller_owner_ref(&()) に block_owner_deletion: Some(true) を付けたものです。math::fermat_splits(fermat.spec.number) の (a, b) ごとに let mut tuple = Tuple::new(&child_name(&fermat.name_any(), a, b), TupleSpec { numbers: vec![a, b] }) を作ってオーナーリファレンスを付け、tuples.patch(…, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&tuple)).await? で apply し、patch が返したものを push します。";
    HINT_3B: "As 2b with Tuples: the names wanted from children, then for tuple in tuples.list(&ListParams::default()).await?, delete those whose ownerReference names the Fermat's uid and whose name is not wanted.",
        "2b と同じことを Tuple で行います。children から必要な名前を集め、tuples.list(&ListParams::default()).await? の tuple のうち、オーナーリファレンスが Fermat の uid を指していて、名前が必要なものに入っていないものを削除します。";
    HINT_3C: "Answers as in 2c, from each child's status.all_squares (None while one has not answered: write nothing). Then the decompositions, in the children's order: for each child whose answer is true and whose spec.numbers is [a, b], math::format_decomposition(math::exact_sqrt(a)?, math::exact_sqrt(b)?) inside a closure that returns an Option (filter_map). Then FermatStatus { observed_generation, is_prime: math::is_prime(n), one_mod_four: math::is_one_mod_four(n), two_squares_found: !decompositions.is_empty(), decompositions }, written with patch_status and \"kind\": \"Fermat\".",
        "答えは 2c と同じく、各子の status.all_squares から集めます (まだ status が書かれていない子があれば何も書きません)。次に分解を子の順番どおりに作ります: 答えが true で spec.numbers が [a, b] の子ごとに、Option を返すクロージャーの中で math::format_decomposition(math::exact_sqrt(a)?, math::exact_sqrt(b)?) (filter_map)。最後に FermatStatus { observed_generation, is_prime: math::is_prime(n), one_mod_four: math::is_one_mod_four(n), two_squares_found: !decompositions.is_empty(), decompositions } を patch_status で (\"kind\": \"Fermat\") 書き込みます。";
    HINT_3D: "As 2d: .owns(ctx.watched::<Tuple>(), watcher::Config::default()) between Controller::new(…) and .run(…).",
        "2d と同じく、Controller::new(…) と .run(…) の間に .owns(ctx.watched::<Tuple>(), watcher::Config::default()) を足します。";
    SKIP_NO_STAGE: "there is no stage {stage} (1, 2 or 3)", "ステージ {stage} はありません (1、2、3 のどれか)";
}
