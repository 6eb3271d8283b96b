{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The forward derivative is evaluation over dual numbers.
--
-- For an environment ρ and tangents v, the dual environment
-- `dual-env ρ v` pairs every array variable's value with its tangent
-- (index variables are unchanged).  Evaluating e over Dual 𝕊
-- (Spec.Scalar.Dual) in it gives, at every position, the value of e
-- and its forward derivative D⟦ e ⟧ ρ v (Spec.Proofs.Forward):
--   ⟦ e ⟧ᴰ (dual-env ρ v) i ≡ (⟦ e ⟧ ρ i , D⟦ e ⟧ ρ v i)
-- So D⟦_⟧'s sum and product rules, and its treatment of every
-- structural node, are not extra definitions: they are what the dual
-- number operations do.  Only f′ and max-sel, the derivatives of the
-- primitives, are declared.
--
-- The proof is one induction on e; no law of the scalars is needed.
-- Index expressions mean the same position in both evaluations
-- (ix-dual), so the decided cases (zero-but, backslide, ix-minus,
-- ix-minusᵣ) take the same branch on both sides; sums are the same
-- fold, and the projections of a fold of pairs under the
-- componentwise + are the folds of the projections (sum-dual).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Dual (𝕊 : Scalar) where

open import Data.Fin as F using (Fin)
open import Data.Product using (_×_; _,_; proj₁; proj₂)
open import Data.Unit using (⊤; tt)
open import Relation.Nullary using (yes; no)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; cong₂; trans; sym)

open import Spec.Array.Base as A using (S; ι; _⊗_; P; Ar)
open import Spec.Array.Properties using (sum-map; sum-cong)
open import Spec.Array.Argmax.Properties using (argmax-cong)
open import Spec.Array.Index as Ix using (_⊕ₚ_; _⊖ₚ_; _⊖ᵣₚ_; combine)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Forward 𝕊 using (TEnv; tlookup; D⟦_⟧)
open import Spec.Scalar.Dual using (Dual)
open import Spec.Scalar.Laws using (Laws)
open import Spec.Lang.AD using (∇₀)

-- evaluation over the dual numbers, qualified: 𝔻.⟦ e ⟧, 𝔻.Env, ...
import Spec.Lang.Eval (Dual 𝕊) as 𝔻

open Scalar 𝕊 using (R; 0#; _+_)

private
  variable
    Γ : Ctx
    s : S

------------------------------------------------------------------------
-- The dual environment

dual-env : Env Γ → TEnv Γ → 𝔻.Env Γ
dual-env {ε}        tt      tt      = tt
dual-env {Γ ▹ ar s} (ρ , a) (v , w) = dual-env ρ v , λ i → a i , w i
dual-env {Γ ▹ ix s} (ρ , i) v       = dual-env ρ v , i

-- an array variable holds its value paired with its tangent
lookup-ar : (x : ar s ∈ Γ) (ρ : Env Γ) (v : TEnv Γ) (i : P s)
          → 𝔻.lookup x (dual-env ρ v) i ≡ (lookup x ρ i , tlookup v x i)
lookup-ar {Γ = Γ ▹ ar _} v₀     (ρ , a) (v , w) i = refl
lookup-ar {Γ = Γ ▹ ar _} (var# (suc nx) px) (ρ , a) (v , w) i = lookup-ar {Γ = Γ} (var# nx px) ρ v i
lookup-ar {Γ = Γ ▹ ix _} (var# (suc nx) px) (ρ , j) v       i = lookup-ar {Γ = Γ} (var# nx px) ρ v i

-- an index variable holds the same position
lookup-ix : (x : ix s ∈ Γ) (ρ : Env Γ) (v : TEnv Γ)
          → 𝔻.lookup x (dual-env ρ v) ≡ lookup x ρ
lookup-ix {Γ = Γ ▹ ix _} v₀     (ρ , j) v       = refl
lookup-ix {Γ = Γ ▹ ar _} (var# (suc nx) px) (ρ , a) (v , w) = lookup-ix {Γ = Γ} (var# nx px) ρ v
lookup-ix {Γ = Γ ▹ ix _} (var# (suc nx) px) (ρ , j) v       = lookup-ix {Γ = Γ} (var# nx px) ρ v

------------------------------------------------------------------------
-- The theorem, and its index half: index expressions evaluate to the
-- same position (an argmax compares the values, which D-dual says are
-- the same in both evaluations)

D-dual : (e : E Γ (ar s)) (ρ : Env Γ) (v : TEnv Γ) (i : P s)
       → 𝔻.⟦ e ⟧ (dual-env ρ v) i ≡ (⟦ e ⟧ ρ i , D⟦ e ⟧ ρ v i)
ix-dual : (i : E Γ (ix s)) (ρ : Env Γ) (v : TEnv Γ) → 𝔻.⟦ i ⟧ (dual-env ρ v) ≡ ⟦ i ⟧ ρ
ix-dual (var x)              ρ v = lookup-ix x ρ v
ix-dual (ix-const i)         ρ v = refl
ix-dual (div m i)            ρ v = cong (Ix.div m) (ix-dual i ρ v)
ix-dual (mod m i)            ρ v = cong (Ix.mod m) (ix-dual i ρ v)
ix-dual (ix-plus i j su sp)  ρ v = cong₂ (λ a b → (a ⊕ₚ b) su sp) (ix-dual i ρ v) (ix-dual j ρ v)
ix-dual (argmax w e)         ρ v =
  argmax-cong (Scalar.less (Dual 𝕊)) (Scalar.less 𝕊) w
    {f = λ k → 𝔻.scal (𝔻.⟦ e ⟧ (dual-env ρ v , k))} {g = λ k → scal (⟦ e ⟧ (ρ , k))} λ i j →
    cong₂ (λ x y → Scalar.less 𝕊 (proj₁ x) (proj₁ y)) (D-dual e (ρ , i) v (ι F.zero)) (D-dual e (ρ , j) v (ι F.zero))

------------------------------------------------------------------------
-- Sums of dual numbers are pairs of sums

sum-dual : (h : Ar s (R × R)) (f g : Ar s R) → (∀ i → h i ≡ (f i , g i))
         → A.sum (Scalar._+_ (Dual 𝕊)) (Scalar.0# (Dual 𝕊)) h ≡ (A.sum _+_ 0# f , A.sum _+_ 0# g)
sum-dual h f g eq =
  cong₂ _,_ (trans (sum-map _ _ _+_ 0# proj₁ refl (λ _ _ → refl) h) (sum-cong _+_ 0# λ i → cong proj₁ (eq i)))
            (trans (sum-map _ _ _+_ 0# proj₂ refl (λ _ _ → refl) h) (sum-cong _+_ 0# λ i → cong proj₂ (eq i)))

D-dual (var x)      ρ v i = lookup-ar x ρ v i
D-dual zero         ρ v i = refl
D-dual one          ρ v i = refl
D-dual (imaps e)    ρ v i = D-dual e (ρ , i) v (ι F.zero)
D-dual (sels e j)   ρ v i =
  trans (cong (𝔻.⟦ e ⟧ (dual-env ρ v)) (ix-dual j ρ v)) (D-dual e ρ v (⟦ j ⟧ ρ))
D-dual (imap e)     ρ v (i ⊗ j) = D-dual e (ρ , i) v j
D-dual (sel e j)    ρ v i =
  trans (cong (λ k → 𝔻.⟦ e ⟧ (dual-env ρ v) (k ⊗ i)) (ix-dual j ρ v)) (D-dual e ρ v (⟦ j ⟧ ρ ⊗ i))
D-dual (imapb m e)  ρ v i = D-dual e (ρ , Ix.div m i) v (Ix.mod m i)
D-dual (selb m e j) ρ v i =
  trans (cong (λ k → 𝔻.⟦ e ⟧ (dual-env ρ v) (combine m k i)) (ix-dual j ρ v))
        (D-dual e ρ v (combine m (⟦ j ⟧ ρ) i))
D-dual (sum e)      ρ v i =
  sum-dual _ (λ k → ⟦ e ⟧ (ρ , k) i) (λ k → D⟦ e ⟧ (ρ , k) v i) λ k → D-dual e (ρ , k) v i
D-dual (zero-but j k e) ρ v i rewrite ix-dual j ρ v | ix-dual k ρ v with ⟦ j ⟧ ρ ≟ₚ ⟦ k ⟧ ρ
... | yes _ = D-dual e ρ v i
... | no  _ = refl
D-dual (slide j sp e su) ρ v i =
  trans (cong (λ k → 𝔻.⟦ e ⟧ (dual-env ρ v) ((k ⊕ₚ i) su sp)) (ix-dual j ρ v))
        (D-dual e ρ v ((⟦ j ⟧ ρ ⊕ₚ i) su sp))
D-dual (backslide j e su sp) ρ v i rewrite ix-dual j ρ v with (i ⊖ₚ ⟦ j ⟧ ρ) su sp
... | yes (k , _) = D-dual e ρ v k
... | no  _       = refl
D-dual (un f e)     ρ v i = cong (Scalar.fn (Dual 𝕊) f) (D-dual e ρ v i)
D-dual (bin plus e e₁) ρ v i = cong₂ (𝔻.bop plus) (D-dual e ρ v i) (D-dual e₁ ρ v i)
D-dual (bin mul e e₁)  ρ v i = cong₂ (𝔻.bop mul)  (D-dual e ρ v i) (D-dual e₁ ρ v i)
D-dual (bin max e e₁)  ρ v i = cong₂ (𝔻.bop max)  (D-dual e ρ v i) (D-dual e₁ ρ v i)
D-dual (scaledown n e) ρ v i = cong (Scalar.scaledown (Dual 𝕊) n) (D-dual e ρ v i)
D-dual (minus e)       ρ v i = cong (Scalar.-_ (Dual 𝕊)) (D-dual e ρ v i)
D-dual (ix-minus j k sp su e) ρ v i rewrite ix-dual j ρ v | ix-dual k ρ v with (⟦ j ⟧ ρ ⊖ₚ ⟦ k ⟧ ρ) su sp
... | yes (l , _) = D-dual e (ρ , l) v i
... | no  _       = refl
D-dual (ix-minusᵣ j k sp su e) ρ v i rewrite ix-dual j ρ v | ix-dual k ρ v with (⟦ j ⟧ ρ ⊖ᵣₚ ⟦ k ⟧ ρ) su sp
... | yes (l , _) = D-dual e (ρ , l) v i
... | no  _       = refl

------------------------------------------------------------------------
-- With ∇₀-correct: the reverse-mode gradient of e with seed sd pairs
-- with the tangents v exactly as sd pairs with the ε-part of evaluating
-- e over the dual numbers.  (This half needs the Laws, through
-- ∇₀-correct.)

module _ (laws : Laws 𝕊) where
  open import Spec.Proofs.AD.Env 𝕊 laws using (⟨_,_⟩; ⟨⟩-cong) renaming (ip to ipE)
  open import Spec.Proofs.AD 𝕊 using (∇₀-correct)

  ∇₀-dual : ∀ {Δ} (e sd : E Δ (ar s)) (ρ : Env Δ) (v : TEnv Δ)
          → ipE Δ (∇₀ e sd) ρ v ≡ ⟨ ⟦ sd ⟧ ρ , (λ i → proj₂ (𝔻.⟦ e ⟧ (dual-env ρ v) i)) ⟩
  ∇₀-dual e sd ρ v =
    trans (∇₀-correct laws e sd ρ v) (⟨⟩-cong (λ _ → refl) λ i → cong proj₂ (sym (D-dual e ρ v i)))
