{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Elaboration of a model file: a chain (Spec.Lang.Chain) and what the
-- runtime needs to know about it, or one message naming the line, the
-- binding, and what is wrong.
--
-- The declarations (input, target, param, const) make the base context, in
-- the order written; every binding is expanded (Spec.Front.Expand) and
-- elaborated (Spec.Front.Check) in the scope of the declarations and
-- the bindings before it, and added to the chain; the last statement,
-- `loss`, must be a scalar (shape 1): the reverse pass is seeded on it.
-- The result records the core terms of the bindings and the proof that
-- the chain erases to them (`faithful`).
------------------------------------------------------------------------
module Spec.Front.Model where

open import Data.Bool using (Bool; true; false; if_then_else_; not; _∨_; _∧_)
open import Data.List as List using (List; []; _∷_; [_]) renaming (_++_ to _++ₗ_)
open import Data.List.Properties using (map-++-commute; unfold-reverse)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat using (ℕ; zero; suc; _∸_)
open import Data.Nat.Show using () renaming (show to showℕ)
open import Data.Product using (Σ; _×_; _,_; proj₁; proj₂)
open import Data.String as String using (String; _++_)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; cong₂; trans; sym)
open import Relation.Nullary using (yes; no)

open import Spec.Array.Base using (S; unit)
open import Spec.Lang.Syntax using (Ctx; _▹_; ar; ix; E)
open import Spec.Lang.Chain
open import Spec.Lang.Chain.Clean using (PF; pf?)
open import Spec.Front.Syntax
open import Spec.Front.Term
open import Spec.Front.Result
open import Spec.Front.Shape using (show; _≟ₛ_)
open import Spec.Front.Parser using (parse)
open import Spec.Front.Expand using (expand; Scope; push; scope-of)
open import Spec.Front.Names as Names using (NameMap; _==_)
open import Spec.Front.Check using (infer)
open import Spec.Front.Sorts using (Sorts; _▸ˢ_; sorts-of)

------------------------------------------------------------------------
-- Erasure of a chain's bindings

erase-binding : Binding → String × Tm
erase-binding (binding x _ e) = x , ⌊ e ⌋

erase-chain : ∀ {Γ} → Chain Γ → List (String × Tm)
erase-chain c = List.map erase-binding (bindings c)

------------------------------------------------------------------------
-- The result

record Elaborated : Set where
  field
    title      : String
    {Δ}        : Ctx
    chain      : Chain (Δ ▹ ar unit ▹ ar unit)
    features   : List String              -- the `input` declarations
    targets    : List String              -- the `target` declarations
    constants  : List String              -- the `const` declarations
    prediction : Maybe String             -- the `output` binding
    objective  : String
    core       : List (String × Tm)       -- the bindings as core terms
    faithful   : erase-chain chain ≡ core
    pf         : PF chain                 -- placeholder-free (found by running pf?)

-- A chain under construction.
private
  record Partial : Set where
    constructor partial
    field
      {Δ}      : Ctx
      chain    : Chain Δ
      sorts    : Sorts Δ
      scope    : Scope
      rcore    : List (String × Tm)       -- the core terms, last first
      faithful : erase-chain chain ≡ List.reverse rcore

  snoc-faithful : ∀ {Δ p} (c : Chain Δ) (x : String) (e : E Δ (ar p)) {rcore t}
                → erase-chain c ≡ List.reverse rcore → ⌊ e ⌋ ≡ t
                → erase-chain (c ▹ (x , e)) ≡ List.reverse ((x , t) ∷ rcore)
  snoc-faithful c x e {rcore} eq refl =
    trans (cong (List.map erase-binding) (bindings-▹ c x e))
          (trans (map-++-commute erase-binding (bindings c) [ binding x _ e ])
                 (trans (cong (_++ₗ _) eq) (sym (unfold-reverse (x , ⌊ e ⌋) rcore))))

  where′ : ℕ → String → String
  where′ l x = showℕ l ++ ": binding " ++ x ++ ": "

  Bound : Ctx → Set
  Bound Δ = Σ Tm λ t → Σ S λ p → Σ (E Δ (ar p)) λ e → ⌊ e ⌋ ≡ t

  array : ∀ {Δ} t is (e : E Δ is) → ⌊ e ⌋ ≡ t → Result (Bound Δ)
  array t (ar p) e eq = ok (t , p , e , eq)
  array t (ix s) e eq = fail ("is an index of shape " ++ show s ++ "; a binding must be an array")

  shallow : Raw → Result Raw
  shallow r = if deeper max-nesting r
              then fail ("nesting deeper than " ++ showℕ max-nesting
                         ++ " levels: bind a part of the expression to a name first")
              else ok r

  -- A binding, elaborated as an array.
  elab : ∀ (Δ : Ctx) → Sorts Δ → Scope → ℕ → String → Raw → Result (Bound Δ)
  elab Δ σ sc l x r = (do
    _ ← shallow r
    t ← expand Δ σ sc r
    (is , e , eq) ← infer Δ σ t
    array t is e eq) at where′ l x

  step : Partial → ℕ × String × Raw → Result Partial
  step (partial {Δ} c σ sc core eq) (l , x , r) = do
    (t , p , e , e≡) ← elab Δ σ sc l x r
    ok (partial (c ▹ (x , e)) (σ ▸ˢ ar p ▸ˢ ar p) (push x (push "" sc)) ((x , t) ∷ core) (snoc-faithful c x e {core} eq e≡))

  steps : Partial → List (ℕ × String × Raw) → Result Partial
  steps p []       = ok p
  steps p (b ∷ bs) = step p b >>= λ p′ → steps p′ bs

------------------------------------------------------------------------
-- Statements

private
  lineOf : ∀ {A : Set} → List (ℕ × A) → ℕ
  lineOf []            = 1
  lineOf ((l , _) ∷ _) = l

  -- The statements after `model`: declarations, then definitions.
  record Parts : Set where
    constructor parts
    field
      decls : List (ℕ × Role × String × S)
      defs  : List (ℕ × Kind × String × Raw)

  split : List Line → Result Parts
  split [] = ok (parts [] [])
  split ((l , model _) ∷ _) = fail (showℕ l ++ ": a second `model` line")
  split ((l , decl r x s) ∷ rest) = split rest >>= λ where
    (parts ds fs) → ok (parts ((l , r , x , s) ∷ ds) fs)
  split ((l , def k x e) ∷ rest) = split rest >>= λ where
    (parts [] fs) → ok (parts [] ((l , k , x , e) ∷ fs))
    (parts ((l′ , _ , y , _) ∷ _) fs) →
      fail (showℕ l′ ++ ": declarations (input, target, param, const) come before the bindings; "
            ++ y ++ " is declared after the binding " ++ x ++ " (line " ++ showℕ l ++ ")")

  -- Every name once, not reserved for derivatives: `seen` maps each name
  -- defined so far to its line.
  names-ok : NameMap ℕ → List (ℕ × String) → Result (NameMap ℕ)
  names-ok seen [] = ok seen
  names-ok seen ((l , x) ∷ xs) with Names.find x seen
  ... | just l′ = fail (showℕ l ++ ": " ++ x ++ " is already defined (line " ++ showℕ l′ ++ ")")
  ... | nothing =
    if String.fromList (List.take 2 (String.toList x)) == "d_"
    then fail (showℕ l ++ ": " ++ x ++ ": names starting with d_ are reserved for gradients")
    else names-ok (Names.insert x l seen) xs

  base : List (ℕ × Role × String × S) → ChainCtx
  base = List.foldl (λ c (_ , _ , x , s) → c ▸ (x , s)) ε

  sameRole : Role → Role → Bool
  sameRole input  input  = true
  sameRole target target = true
  sameRole param  param  = true
  sameRole constant constant = true
  sameRole _      _      = false

  withRole : Role → List (ℕ × Role × String × S) → List String
  withRole r ds = List.map (λ (_ , _ , x , _) → x) (List.boolFilter (λ (_ , r′ , _ , _) → sameRole r r′) ds)

  outputs : List (ℕ × Kind × String × Raw) → List (ℕ × String)
  outputs [] = []
  outputs ((l , output , x , _) ∷ fs) = (l , x) ∷ outputs fs
  outputs (_ ∷ fs) = outputs fs

  -- The bindings before the last, which must not be `loss`.
  plain-defs : List (ℕ × Kind × String × Raw) → Result (List (ℕ × String × Raw))
  plain-defs [] = ok []
  plain-defs ((l , loss , x , _) ∷ _) =
    fail (showℕ l ++ ": binding " ++ x ++ ": `loss` must be the last statement")
  plain-defs ((l , _ , x , e) ∷ fs) = plain-defs fs >>= λ bs → ok ((l , x , e) ∷ bs)

  -- A failure with a note appended.
  noted : ∀ {A : Set} → String → Result A → Result A
  noted n (ok a)   = ok a
  noted n (fail m) = fail (m ++ n)

  shape-of : String → List Binding → Maybe S
  shape-of x []                   = nothing
  shape-of x (binding y p _ ∷ bs) = if x == y then just p else shape-of x bs

  -- The one target and the output, where their shapes differ: (target, its shape, output,
  -- its shape).
  differ : String → S → String → Maybe S → Maybe (String × S × String × S)
  differ y s o nothing  = nothing
  differ y s o (just p) with s ≟ₛ p
  ... | yes _ = nothing
  ... | no _  = just (y , s , o , p)

  mismatch : List (ℕ × Role × String × S) → Maybe String → Partial → Maybe (String × S × String × S)
  mismatch ds nothing  _ = nothing
  mismatch ds (just o) (partial c _ _ _ _) with List.boolFilter (λ (_ , r , _ , _) → sameRole target r) ds
  ... | (_ , _ , y , s) ∷ [] = differ y s o (shape-of o (bindings c))
  ... | _                    = nothing

  -- The declarations with the target y of shape p.
  retarget : String → S → List (ℕ × Role × String × S) → List (ℕ × Role × String × S)
  retarget y p = List.map λ where
    (l , r , x , s) → if sameRole target r ∧ (x == y) then (l , r , x , p) else (l , r , x , s)

  -- The last binding, the loss: a scalar.
  finish : String → List String → List String → List String → Maybe String → String → Partial
         → ℕ → String → Raw → Result Elaborated
  finish title fs ts ks pred note (partial {Δ} c σ sc core eq) l x r = do
    (t , p , e , e≡) ← noted note (elab Δ σ sc l x r)
    scalar t p e e≡
    where
      placeholder-free : ∀ t (e : E Δ (ar unit)) → ⌊ e ⌋ ≡ t → Maybe (PF (c ▹ (x , e)))
                       → Result Elaborated
      scalar : ∀ t p (e : E Δ (ar p)) → ⌊ e ⌋ ≡ t → Result Elaborated
      scalar t p e e≡ with p ≟ₛ unit
      ... | yes refl = placeholder-free t e e≡ (pf? (c ▹ (x , e)))
      ... | no _ = fail (where′ l x ++ "the loss must be a scalar (shape 1), found shape " ++ show p)

      placeholder-free t e e≡ (just pf) = ok (record
        { title = title ; chain = c ▹ (x , e) ; features = fs ; targets = ts ; constants = ks
        ; prediction = pred ; objective = x ; core = List.reverse ((x , t) ∷ core)
        ; faithful = snoc-faithful c x e {core} eq e≡ ; pf = pf })
      -- not reached: no binding can name a placeholder (they have the empty
      -- name); pf? is complete (Spec.Proofs.Chain.Clean.pf?-nothing), so
      -- were it reached, the chain would not be placeholder-free
      placeholder-free t e e≡ nothing =
        fail (where′ l x ++ "a binding mentions a derivative placeholder")

private
  one-output : List (ℕ × String) → Result (Maybe String)
  one-output []                     = ok nothing
  one-output ((_ , x) ∷ [])         = ok (just x)
  one-output (_ ∷ (l , x) ∷ _)      = fail (showℕ l ++ ": binding " ++ x ++ ": a second `output`")

  -- `end`: the file's last line, where a model without bindings is missing its objective
  final : ℕ → List (ℕ × Kind × String × Raw) → Result (ℕ × String × Raw)
  final end fs with List.reverse fs
  ... | (l , loss , x , e) ∷ _ = ok (l , x , e)
  ... | (l , _ , x , _) ∷ _ =
    fail (showℕ l ++ ": the last statement must be the objective: loss NAME = …")
  ... | [] = fail (showℕ end ++ ": the model has no bindings; the last statement must be the "
                   ++ "objective: loss NAME = …")

  last-line : ℕ → List Line → ℕ
  last-line l []              = l
  last-line _ ((l , _) ∷ ls)  = last-line l ls

  decl-names : List (ℕ × Role × String × S) → List (ℕ × String)
  decl-names = List.map (λ (l , _ , x , _) → l , x)

  def-names : List (ℕ × Kind × String × Raw) → List (ℕ × String)
  def-names = List.map (λ (l , _ , x , _) → l , x)

  -- The declarations ds and the definitions fs of a model, its last line `end`. A loss that
  -- does not elaborate while the one target's shape differs from the output's says so when
  -- the model would elaborate with the output's shape for the target (`target y : 4` for a
  -- 10-way output: the loss's message is about a selection or a sum, the cause is the
  -- declaration); `fuel` bounds the attempts (one).
  elab-parts : ℕ → String → ℕ → List (ℕ × Role × String × S) → List (ℕ × Kind × String × Raw)
             → Result Elaborated
  elab-parts fuel title end ds fs = do
    _ ← names-ok Names.empty (decl-names ds ++ₗ def-names fs)
    pred ← one-output (outputs fs)
    (ll , lx , le) ← final end fs
    bs ← plain-defs (List.take (List.length fs ∸ 1) fs)
    let (Γ , ns) = ce-split (base ds)
        scope = scope-of (List.map proj₂ (decl-names ds))
    p ← steps (partial (ε {Γ} ns) (sorts-of Γ) scope [] refl) bs
    finish title (withRole input ds) (withRole target ds) (withRole constant ds) pred
           (note fuel (mismatch ds pred p)) p ll lx le
    where
      note : ℕ → Maybe (String × S × String × S) → String
      note zero    _       = ""
      note (suc k) nothing = ""
      note (suc k) (just (y , s , o , q)) with elab-parts k title end (retarget y q ds) fs
      ... | ok _   = "; with `target " ++ y ++ " : " ++ show q ++ "`, the shape of the output "
                     ++ o ++ ", the model elaborates"
      ... | fail _ = ""

  body : ℕ → String → List Line → Result Elaborated
  body start title rest = do
    parts ds fs ← split rest
    elab-parts 1 title (last-line start rest) ds fs

------------------------------------------------------------------------
-- A model file

elaborate : String → Result Elaborated
elaborate text = parse text >>= λ where
  [] → fail "1: the file is empty; a model file starts with `model NAME`"
  ((l , model title) ∷ rest) → body l title rest
  ((l , _) ∷ _) → fail (showℕ l ++ ": a model file starts with `model NAME`")
