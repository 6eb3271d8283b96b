{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Locality of expressions and of reverse mode.
--
-- `Only A e`: every variable that occurs in e satisfies the predicate
-- A (under a binder, the bound index variable is always allowed).  It
-- is a syntactic condition, read off e by one fold; `eval-only` is what
-- it buys: two environments that agree on the variables satisfying A
-- give e the same value.  `Only-ren` moves the condition along a
-- renaming, `Only-mono` weakens it, `Only-all` holds for A true
-- everywhere.
--
-- `∇-only` is the locality of reverse mode: ∇ e s δ only adds to δ
-- expressions built from e, s and the entries of δ (and index
-- variables it binds itself), so if all of these read only variables
-- in A, so does every entry of the result.  The proof follows the
-- clauses of ∇ (Spec.Lang.AD).  No law of the scalars is needed.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Chain.Local (𝕊 : Scalar) where

open import Data.Fin as F using (Fin)
open import Data.Product using (_×_; _,_; proj₁; proj₂)
open import Data.Unit using (⊤; tt)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base using (S; ι; _⊗_; P)
open import Spec.Array.Index as Ix using (_⊕ₚ_; combine)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren; ext; ↑_)
open import Spec.Lang.AD
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Val 𝕊

private
  variable
    Γ Δ Ψ : Ctx
    is ip : IS
    s u   : S

------------------------------------------------------------------------
-- Predicates on variables

Pred : Ctx → Set₁
Pred Γ = ∀ {is} → is ∈ Γ → Set

-- under a binder: the new variable is allowed
lift : Pred Γ → Pred (Γ ▹ ip)
lift A (var# zero refl)  = ⊤
lift A (var# (suc n) p) = A (var# n p)

------------------------------------------------------------------------
-- Every variable of e satisfies A

Only : Pred Γ → E Γ is → Set
Only A (var x)                 = A x
Only A zero                    = ⊤
Only A one                     = ⊤
Only A (imaps e)               = Only (lift A) e
Only A (sels e i)              = Only A e × Only A i
Only A (imap e)                = Only (lift A) e
Only A (sel e i)               = Only A e × Only A i
Only A (imapb m e)             = Only (lift A) e
Only A (selb m e i)            = Only A e × Only A i
Only A (sum e)                 = Only (lift A) e
Only A (zero-but i j e)        = Only A i × Only A j × Only A e
Only A (slide i sp e su)       = Only A i × Only A e
Only A (backslide i e su sp)   = Only A i × Only A e
Only A (un f e)                = Only A e
Only A (bin op e e₁)           = Only A e × Only A e₁
Only A (scaledown n e)         = Only A e
Only A (minus e)               = Only A e
Only A (ix-const i)            = ⊤
Only A (div m i)               = Only A i
Only A (mod m i)               = Only A i
Only A (ix-plus i j su sp)     = Only A i × Only A j
Only A (argmax w e)            = Only (lift A) e
Only A (ix-minus i j sp su e)  = Only A i × Only A j × Only (lift A) e
Only A (ix-minusᵣ i j sp su e) = Only A i × Only A j × Only (lift A) e

------------------------------------------------------------------------
-- Along renamings, weaker predicates, the true predicate

lift-ren : {A : Pred Γ} {B : Pred Δ} (ρ : Ren Γ Δ)
         → (∀ {is} (x : is ∈ Γ) → A x → B (ρ x))
         → ∀ {is} (x : is ∈ Γ ▹ ip) → lift A x → lift B (ext ρ x)
lift-ren ρ h (var# zero refl)  _ = tt
lift-ren ρ h (var# (suc n) p) a = h (var# n p) a

Only-ren : {A : Pred Γ} {B : Pred Δ} (ρ : Ren Γ Δ)
         → (∀ {is} (x : is ∈ Γ) → A x → B (ρ x))
         → (e : E Γ is) → Only A e → Only B (ren ρ e)
Only-ren ρ h (var x)                 o              = h x o
Only-ren ρ h zero                    o              = tt
Only-ren ρ h one                     o              = tt
Only-ren ρ h (imaps e)               o              = Only-ren (ext ρ) (lift-ren ρ h) e o
Only-ren ρ h (sels e i)              (oe , oi)      = Only-ren ρ h e oe , Only-ren ρ h i oi
Only-ren ρ h (imap e)                o              = Only-ren (ext ρ) (lift-ren ρ h) e o
Only-ren ρ h (sel e i)               (oe , oi)      = Only-ren ρ h e oe , Only-ren ρ h i oi
Only-ren ρ h (imapb m e)             o              = Only-ren (ext ρ) (lift-ren ρ h) e o
Only-ren ρ h (selb m e i)            (oe , oi)      = Only-ren ρ h e oe , Only-ren ρ h i oi
Only-ren ρ h (sum e)                 o              = Only-ren (ext ρ) (lift-ren ρ h) e o
Only-ren ρ h (zero-but i j e)        (oi , oj , oe) = Only-ren ρ h i oi , Only-ren ρ h j oj , Only-ren ρ h e oe
Only-ren ρ h (slide i sp e su)       (oi , oe)      = Only-ren ρ h i oi , Only-ren ρ h e oe
Only-ren ρ h (backslide i e su sp)   (oi , oe)      = Only-ren ρ h i oi , Only-ren ρ h e oe
Only-ren ρ h (un f e)                o              = Only-ren ρ h e o
Only-ren ρ h (bin op e e₁)           (oe , oe₁)     = Only-ren ρ h e oe , Only-ren ρ h e₁ oe₁
Only-ren ρ h (scaledown n e)         o              = Only-ren ρ h e o
Only-ren ρ h (minus e)               o              = Only-ren ρ h e o
Only-ren ρ h (ix-const i)            o              = tt
Only-ren ρ h (div m i)               o              = Only-ren ρ h i o
Only-ren ρ h (mod m i)               o              = Only-ren ρ h i o
Only-ren ρ h (ix-plus i j su sp)     (oi , oj)      = Only-ren ρ h i oi , Only-ren ρ h j oj
Only-ren ρ h (argmax w e)            o              = Only-ren (ext ρ) (lift-ren ρ h) e o
Only-ren ρ h (ix-minus i j sp su e)  (oi , oj , oe) =
  Only-ren ρ h i oi , Only-ren ρ h j oj , Only-ren (ext ρ) (lift-ren ρ h) e oe
Only-ren ρ h (ix-minusᵣ i j sp su e) (oi , oj , oe) =
  Only-ren ρ h i oi , Only-ren ρ h j oj , Only-ren (ext ρ) (lift-ren ρ h) e oe

lift-mono : {A B : Pred Γ} → (∀ {is} (x : is ∈ Γ) → A x → B x)
          → ∀ {is} (x : is ∈ Γ ▹ ip) → lift A x → lift B x
lift-mono h (var# zero refl)  _ = tt
lift-mono h (var# (suc n) p) a = h (var# n p) a

Only-mono : {A B : Pred Γ} → (∀ {is} (x : is ∈ Γ) → A x → B x)
          → (e : E Γ is) → Only A e → Only B e
Only-mono h (var x)                 o              = h x o
Only-mono h zero                    o              = tt
Only-mono h one                     o              = tt
Only-mono h (imaps e)               o              = Only-mono (lift-mono h) e o
Only-mono h (sels e i)              (oe , oi)      = Only-mono h e oe , Only-mono h i oi
Only-mono h (imap e)                o              = Only-mono (lift-mono h) e o
Only-mono h (sel e i)               (oe , oi)      = Only-mono h e oe , Only-mono h i oi
Only-mono h (imapb m e)             o              = Only-mono (lift-mono h) e o
Only-mono h (selb m e i)            (oe , oi)      = Only-mono h e oe , Only-mono h i oi
Only-mono h (sum e)                 o              = Only-mono (lift-mono h) e o
Only-mono h (zero-but i j e)        (oi , oj , oe) = Only-mono h i oi , Only-mono h j oj , Only-mono h e oe
Only-mono h (slide i sp e su)       (oi , oe)      = Only-mono h i oi , Only-mono h e oe
Only-mono h (backslide i e su sp)   (oi , oe)      = Only-mono h i oi , Only-mono h e oe
Only-mono h (un f e)                o              = Only-mono h e o
Only-mono h (bin op e e₁)           (oe , oe₁)     = Only-mono h e oe , Only-mono h e₁ oe₁
Only-mono h (scaledown n e)         o              = Only-mono h e o
Only-mono h (minus e)               o              = Only-mono h e o
Only-mono h (ix-const i)            o              = tt
Only-mono h (div m i)               o              = Only-mono h i o
Only-mono h (mod m i)               o              = Only-mono h i o
Only-mono h (ix-plus i j su sp)     (oi , oj)      = Only-mono h i oi , Only-mono h j oj
Only-mono h (argmax w e)            o              = Only-mono (lift-mono h) e o
Only-mono h (ix-minus i j sp su e)  (oi , oj , oe) =
  Only-mono h i oi , Only-mono h j oj , Only-mono (lift-mono h) e oe
Only-mono h (ix-minusᵣ i j sp su e) (oi , oj , oe) =
  Only-mono h i oi , Only-mono h j oj , Only-mono (lift-mono h) e oe

lift-all : {A : Pred Γ} → (∀ {is} (x : is ∈ Γ) → A x) → ∀ {is} (x : is ∈ Γ ▹ ip) → lift A x
lift-all h (var# zero refl)  = tt
lift-all h (var# (suc n) p) = h (var# n p)

Only-all : {A : Pred Γ} → (∀ {is} (x : is ∈ Γ) → A x) → (e : E Γ is) → Only A e
Only-all h (var x)                 = h x
Only-all h zero                    = tt
Only-all h one                     = tt
Only-all h (imaps e)               = Only-all (lift-all h) e
Only-all h (sels e i)              = Only-all h e , Only-all h i
Only-all h (imap e)                = Only-all (lift-all h) e
Only-all h (sel e i)               = Only-all h e , Only-all h i
Only-all h (imapb m e)             = Only-all (lift-all h) e
Only-all h (selb m e i)            = Only-all h e , Only-all h i
Only-all h (sum e)                 = Only-all (lift-all h) e
Only-all h (zero-but i j e)        = Only-all h i , Only-all h j , Only-all h e
Only-all h (slide i sp e su)       = Only-all h i , Only-all h e
Only-all h (backslide i e su sp)   = Only-all h i , Only-all h e
Only-all h (un f e)                = Only-all h e
Only-all h (bin op e e₁)           = Only-all h e , Only-all h e₁
Only-all h (scaledown n e)         = Only-all h e
Only-all h (minus e)               = Only-all h e
Only-all h (ix-const i)            = tt
Only-all h (div m i)               = Only-all h i
Only-all h (mod m i)               = Only-all h i
Only-all h (ix-plus i j su sp)     = Only-all h i , Only-all h j
Only-all h (argmax w e)            = Only-all (lift-all h) e
Only-all h (ix-minus i j sp su e)  = Only-all h i , Only-all h j , Only-all (lift-all h) e
Only-all h (ix-minusᵣ i j sp su e) = Only-all h i , Only-all h j , Only-all (lift-all h) e

------------------------------------------------------------------------
-- The meaning only reads the allowed variables

-- γ and γ′ agree on the variables satisfying A
Agree : Pred Γ → Env Γ → Env Γ → Set
Agree {Γ} A γ γ′ = ∀ {is} (x : is ∈ Γ) → A x → Same is (lookup x γ) (lookup x γ′)

Agree-lift : {A : Pred Γ} {γ γ′ : Env Γ} → Agree A γ γ′ → (a : Val ip) → Agree (lift A) (γ , a) (γ′ , a)
Agree-lift {ip = ip} H a (var# zero refl)  _ = Same-refl ip a
Agree-lift           H a (var# (suc n) p) h = H (var# n p) h

eval-only : {A : Pred Γ} {γ γ′ : Env Γ} → Agree A γ γ′
          → (e : E Γ is) → Only A e → Same is (⟦ e ⟧ γ) (⟦ e ⟧ γ′)
eval-only H (var x)       h = H x h
eval-only H zero          h = λ _ → refl
eval-only H one           h = λ _ → refl
eval-only H (imaps e)     h = λ i → eval-only (Agree-lift H i) e h (ι F.zero)
eval-only {γ′ = γ′} H (sels e i) (he , hi) = λ _ →
  trans (eval-only H e he _) (cong (⟦ e ⟧ γ′) (eval-only H i hi))
eval-only H (imap e)      h = λ { (i ⊗ j) → eval-only (Agree-lift H i) e h j }
eval-only {γ′ = γ′} H (sel e i) (he , hi) = λ j →
  trans (eval-only H e he _) (cong (λ i′ → ⟦ e ⟧ γ′ (i′ ⊗ j)) (eval-only H i hi))
eval-only H (imapb m e)   h = λ k →
  eval-only (Agree-lift H (Ix.div m k)) e h (Ix.mod m k)
eval-only {γ′ = γ′} H (selb m e i) (he , hi) = λ j →
  trans (eval-only H e he _) (cong (λ i′ → ⟦ e ⟧ γ′ (combine m i′ j)) (eval-only H i hi))
eval-only H (sum e)       h = Σ-cong λ i → eval-only (Agree-lift H i) e h
eval-only H (zero-but i j e) (hi , hj , he) =
  zero-but-cong (eval-only H i hi) (eval-only H j hj) (eval-only H e he)
eval-only {γ′ = γ′} H (slide i sp e su) (hi , he) = λ j →
  trans (eval-only H e he _) (cong (λ i′ → ⟦ e ⟧ γ′ ((i′ ⊕ₚ j) su sp)) (eval-only H i hi))
eval-only H (backslide i e su sp) (hi , he) = backslide-cong su sp (eval-only H i hi) (eval-only H e he)
eval-only H (un f e)      h = λ k → cong (Scalar.fn 𝕊 f) (eval-only H e h k)
eval-only H (bin op e e₁) (he , he₁) = λ k → cong₂ (bop op) (eval-only H e he k) (eval-only H e₁ he₁ k)
eval-only H (scaledown n e) h = λ k → cong (Scalar.scaledown 𝕊 n) (eval-only H e h k)
eval-only H (minus e)     h = λ k → cong (Scalar.-_ 𝕊) (eval-only H e h k)
eval-only H (ix-const i)  h = refl
eval-only H (div m i)     h = cong (Ix.div m) (eval-only H i h)
eval-only H (mod m i)     h = cong (Ix.mod m) (eval-only H i h)
eval-only H (ix-plus i j su sp) (hi , hj) =
  cong₂ (λ a b → (a ⊕ₚ b) su sp) (eval-only H i hi) (eval-only H j hj)
eval-only H (argmax w e) h =
  argmax-sem-cong w λ i → eval-only (Agree-lift H i) e h (ι F.zero)
eval-only H (ix-minus i j sp su e) (hi , hj , he) =
  ix-minus-cong sp su (eval-only H i hi) (eval-only H j hj)
    (λ k → eval-only (Agree-lift H k) e he)
eval-only H (ix-minusᵣ i j sp su e) (hi , hj , he) =
  ix-minusᵣ-cong sp su (eval-only H i hi) (eval-only H j hj)
    (λ k → eval-only (Agree-lift H k) e he)

------------------------------------------------------------------------
-- Gradient environments whose entries read only allowed variables

AllOnly : (Γ : Ctx) → Pred Δ → EnvE Γ Δ → Set
AllOnly ε          A δ       = ⊤
AllOnly (Γ ▹ ar s) A (δ , e) = AllOnly Γ A δ × Only A e
AllOnly (Γ ▹ ix s) A δ       = AllOnly Γ A δ

AllOnly-lookup : {A : Pred Δ} (δ : EnvE Γ Δ) → AllOnly Γ A δ → (x : ar s ∈ Γ) → Only A (lookupE δ x)
AllOnly-lookup {Γ = Γ ▹ ar _} (δ , e) (_ , o) v₀     = o
AllOnly-lookup {Γ = Γ ▹ ar _} (δ , e) (h , _) (var# (suc nx) px) = AllOnly-lookup {Γ = Γ} δ h (var# nx px)
AllOnly-lookup {Γ = Γ ▹ ix _} δ       h       (var# (suc nx) px) = AllOnly-lookup {Γ = Γ} δ h (var# nx px)

AllOnly-mono : {A B : Pred Δ} → (∀ {is} (x : is ∈ Δ) → A x → B x)
             → (δ : EnvE Γ Δ) → AllOnly Γ A δ → AllOnly Γ B δ
AllOnly-mono {Γ = ε}        h δ       _        = tt
AllOnly-mono {Γ = Γ ▹ ar _} h (δ , e) (o , oe) = AllOnly-mono {Γ = Γ} h δ o , Only-mono h e oe
AllOnly-mono {Γ = Γ ▹ ix _} h δ       o        = AllOnly-mono {Γ = Γ} h δ o

AllOnly-zero : {A : Pred Δ} → AllOnly Γ A (env-zero {Γ} {Δ})
AllOnly-zero {Γ = ε}        = tt
AllOnly-zero {Γ = Γ ▹ ar _} = AllOnly-zero {Γ = Γ} , tt
AllOnly-zero {Γ = Γ ▹ ix _} = AllOnly-zero {Γ = Γ}

AllOnly-update : {A : Pred Δ} (δ : EnvE Γ Δ) (x : ar s ∈ Γ) (sd : E Δ (ar s))
               → AllOnly Γ A δ → Only A sd → AllOnly Γ A (update δ x (_⊞ sd))
AllOnly-update {Γ = Γ ▹ ar _} (δ , e) v₀     sd (h , o) os = h , (o , os)
AllOnly-update {Γ = Γ ▹ ar _} (δ , e) (var# (suc nx) px) sd (h , o) os = AllOnly-update {Γ = Γ} δ (var# nx px) sd h os , o
AllOnly-update {Γ = Γ ▹ ix _} δ       (var# (suc nx) px) sd h       os = AllOnly-update {Γ = Γ} δ (var# nx px) sd h os

-- the body's entries closed by b and added to δ′ (close keeps δ′'s
-- entry where the body's is zero)
AllOnly-close : {A : Pred (Δ ▹ ix u)} {B : Pred Δ} (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q))
              → (∀ {q} (e : E (Δ ▹ ix u) (ar q)) → Only A e → Only B (b e))
              → (δ : EnvE Γ (Δ ▹ ix u)) (δ′ : EnvE Γ Δ) → AllOnly Γ A δ → AllOnly Γ B δ′
              → AllOnly Γ B (env-zipWith {Γ = Γ} (close b) δ δ′)
AllOnly-close {Γ = ε}        b hb δ       δ′        _        _          = tt
AllOnly-close {Γ = Γ ▹ ar _} b hb (δ , e) (δ′ , e′) (o , oe) (o′ , oe′) =
  AllOnly-close {Γ = Γ} b hb δ δ′ o o′ , only e e′ oe oe′
  where
    only : ∀ {q} (z : E _ (ar q)) (d : E _ (ar q)) → Only _ z → Only _ d → Only _ (close b z d)
    only z d oz od with zero? z
    ... | is-zero = od
    ... | other = hb z oz , od
AllOnly-close {Γ = Γ ▹ ix _} b hb δ       δ′        o        o′         = AllOnly-close {Γ = Γ} b hb δ δ′ o o′

------------------------------------------------------------------------
-- Reverse mode is local

-- weakening by an index variable keeps the condition
Only-↑ : {A : Pred Δ} (e : E Δ is) → Only A e → Only (lift {ip = ip} A) (↑ e)
Only-↑ e = Only-ren vₛ (λ x a → a) e

Only-deriv : {A : Pred Δ} (f : Fn) (e : E Δ (ar s)) → Only A e → Only A (deriv f e)
Only-deriv Fn.logistic e o = o , (tt , o)
Only-deriv Fn.exp      e o = o
Only-deriv Fn.log      e o = o
Only-deriv Fn.recip    e o = o , o
Only-deriv Fn.sqrt     e o = o , o
Only-deriv Fn.relu     e o = o
Only-deriv Fn.step     e o = tt
Only-deriv Fn.detach   e o = tt
Only-deriv Fn.erf      e o = o
Only-deriv Fn.derf     e o = (o , o) , o

∇-only : {A : Pred Δ} (e sd : E Δ (ar s)) (δ : EnvE Δ Δ)
       → Only A e → Only A sd → AllOnly Δ A δ → AllOnly Δ A (∇ e sd δ)

-- a binder: the body's gradient from zero, closed by b, added to δ
map-bind-only : {A : Pred Δ} (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q))
              → (∀ {q} (e : E (Δ ▹ ix u) (ar q)) → Only (lift A) e → Only A (b e))
              → (e sd : E (Δ ▹ ix u) (ar s)) (δ : EnvE Δ Δ)
              → Only (lift A) e → Only (lift A) sd → AllOnly Δ A δ
              → AllOnly Δ A (map-bind b e sd δ)
map-bind-only {Δ = Δ} {u = u} b hb e sd δ oe os oδ =
  AllOnly-close {Γ = Δ} b hb (∇ e sd (env-zero {Δ ▹ ix u})) δ
    (∇-only e sd (env-zero {Δ ▹ ix u}) oe os (AllOnly-zero {Γ = Δ ▹ ix u}))
    oδ

∇-only {Δ = Δ} (var x) sd δ o os oδ = AllOnly-update {Γ = Δ} δ x sd oδ os
∇-only zero sd δ o os oδ = oδ
∇-only one  sd δ o os oδ = oδ
∇-only (imaps e) sd δ o os oδ =
  map-bind-only sum (λ _ h → h) e (sels (↑ sd) (var v₀)) δ o (Only-↑ sd os , tt) oδ
∇-only (sels e i) sd δ (oe , oi) os oδ =
  ∇-only e (imaps (zero-but (var v₀) (↑ i) (↑ sd))) δ oe (tt , Only-↑ i oi , Only-↑ sd os) oδ
∇-only (imap e) sd δ o os oδ =
  map-bind-only sum (λ _ h → h) e (sel (↑ sd) (var v₀)) δ o (Only-↑ sd os , tt) oδ
∇-only (sel e i) sd δ (oe , oi) os oδ =
  ∇-only e (imap (zero-but (var v₀) (↑ i) (↑ sd))) δ oe (tt , Only-↑ i oi , Only-↑ sd os) oδ
∇-only (imapb m e) sd δ o os oδ =
  map-bind-only sum (λ _ h → h) e (selb m (↑ sd) (var v₀)) δ o (Only-↑ sd os , tt) oδ
∇-only (selb m e i) sd δ (oe , oi) os oδ =
  ∇-only e (imapb m (zero-but (var v₀) (↑ i) (↑ sd))) δ oe (tt , Only-↑ i oi , Only-↑ sd os) oδ
∇-only (sum e) sd δ o os oδ =
  map-bind-only sum (λ _ h → h) e (↑ sd) δ o (Only-↑ sd os) oδ
∇-only (zero-but i j e) sd δ (oi , oj , oe) os oδ = ∇-only e (zero-but i j sd) δ oe (oi , oj , os) oδ
∇-only (slide i sp e su) sd δ (oi , oe) os oδ = ∇-only e (backslide i sd su sp) δ oe (oi , os) oδ
∇-only (backslide i e su sp) sd δ (oi , oe) os oδ = ∇-only e (slide i sp sd su) δ oe (oi , os) oδ
∇-only (un Fn.logistic e) sd δ o os oδ =
  ∇-only e (sd ⊠ logistic e ⊠ (one ⊞ minus (logistic e))) δ o ((os , o) , (tt , o)) oδ
∇-only (un Fn.exp e)   sd δ o os oδ = ∇-only e (sd ⊠ deriv Fn.exp e) δ o (os , Only-deriv Fn.exp e o) oδ
∇-only (un Fn.log e)   sd δ o os oδ = ∇-only e (sd ⊠ deriv Fn.log e) δ o (os , Only-deriv Fn.log e o) oδ
∇-only (un Fn.recip e) sd δ o os oδ = ∇-only e (sd ⊠ deriv Fn.recip e) δ o (os , Only-deriv Fn.recip e o) oδ
∇-only (un Fn.sqrt e)  sd δ o os oδ = ∇-only e (sd ⊠ deriv Fn.sqrt e) δ o (os , Only-deriv Fn.sqrt e o) oδ
∇-only (un Fn.relu e)  sd δ o os oδ = ∇-only e (sd ⊠ deriv Fn.relu e) δ o (os , Only-deriv Fn.relu e o) oδ
∇-only (un Fn.step e)  sd δ o os oδ = oδ
∇-only (un Fn.detach e) sd δ o os oδ = oδ
∇-only (un Fn.erf e)   sd δ o os oδ = ∇-only e (sd ⊠ deriv Fn.erf e) δ o (os , Only-deriv Fn.erf e o) oδ
∇-only (un Fn.derf e)  sd δ o os oδ = ∇-only e (sd ⊠ deriv Fn.derf e) δ o (os , Only-deriv Fn.derf e o) oδ
∇-only (e ⊞ e₁) sd δ (oe , oe₁) os oδ = ∇-only e sd (∇ e₁ sd δ) oe os (∇-only e₁ sd δ oe₁ os oδ)
∇-only (e ⊠ e₁) sd δ (oe , oe₁) os oδ =
  ∇-only e (sd ⊠ e₁) (∇ e₁ (sd ⊠ e) δ) oe (os , oe₁) (∇-only e₁ (sd ⊠ e) δ oe₁ (os , oe) oδ)
∇-only (e ⊔ e₁) sd δ (oe , oe₁) os oδ =
  ∇-only e (sd ⊠ max-step e e₁) (∇ e₁ s₁ δ) oe (os , (oe , oe₁))
         (∇-only e₁ s₁ δ oe₁ (os , (tt , (oe , oe₁))) oδ)
  where s₁ = sd ⊠ (one ⊞ minus (max-step e e₁))
∇-only (scaledown n e) sd δ o os oδ = ∇-only e (scaledown n sd) δ o os oδ
∇-only (minus e) sd δ o os oδ = ∇-only e (minus sd) δ o os oδ
∇-only (ix-minus i j sp su e) sd δ (oi , oj , oe) os oδ =
  map-bind-only (ix-minus i j sp su) (λ _ h → oi , oj , h) e (↑ sd) δ oe (Only-↑ sd os) oδ
∇-only (ix-minusᵣ i j sp su e) sd δ (oi , oj , oe) os oδ =
  map-bind-only (ix-minusᵣ i j sp su) (λ _ h → oi , oj , h) e (↑ sd) δ oe (Only-↑ sd os) oδ
