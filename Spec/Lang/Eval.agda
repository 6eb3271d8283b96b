{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The meaning of E (paper §5.1, §7.1): an expression over Γ denotes a
-- function from environments of Γ to values, over any scalar
-- structure 𝕊.
--
-- Environments are explicit (nested pairs, `lookup` finds a variable),
-- and array values are functions, so laws about ⟦_⟧ are stated
-- pointwise (Spec.Theorems, proofs in Spec.Proofs).  Where the meaning needs a
-- case split on decided index arithmetic (zero-but, ix-minus,
-- ix-minusᵣ) it goes through a small named helper (`if-eq`, `at`), so
-- that a proof can rewrite the decision once.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Lang.Eval (𝕊 : Scalar) where

open import Data.Fin as F using (Fin)
import Data.Fin.Properties as Fₚ
open import Data.Product using (_×_; _,_; ∃; proj₁; proj₂)
open import Data.Unit using (⊤; tt)
open import Relation.Nullary using (Dec; yes; no)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; cong₂)

open Scalar 𝕊 renaming (scaledown to scaledownʳ; max to maxʳ)

open import Spec.Array.Base as A
  using (S; ι; _⊗_; P; Ar; unit; K; map; zipWith; nest; unnest)
open import Spec.Array.Index as Ix using (_⊕ₚ_; _⊖ₚ_; _⊖ᵣₚ_; ι-injective; ⊗-injective)
import Spec.Array.Slide as Sl
import Spec.Array.Argmax as Am
open import Spec.Array.Block using (block; unblock)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax

private
  variable
    Γ     : Ctx
    is    : IS
    s p q : S

------------------------------------------------------------------------
-- Values and environments

Val : IS → Set
Val (ar s) = Ar s R
Val (ix s) = P s

Env : Ctx → Set
Env ε        = ⊤
Env (Γ ▹ is) = Env Γ × Val is

lookup : is ∈ Γ → Env Γ → Val is
lookup {Γ = _ ▹ _} (var# zero refl)  (ρ , x) = x
lookup {Γ = _ ▹ _} (var# (suc n) p) (ρ , _) = lookup (var# n p) ρ

------------------------------------------------------------------------
-- Decidable equality of positions

open import Spec.Array.Index.Properties public using (_≟ₚ_)

------------------------------------------------------------------------
-- Helpers for the decided cases

-- the only element of a unit-shaped array
scal : Ar unit R → R
scal a = a (ι F.zero)

bop : Bop → R → R → R
bop plus = _+_
bop mul  = _*_
bop max  = maxʳ

-- `if-eq d a`: a if the positions were equal, zero otherwise
if-eq : {i j : P s} → Dec (i ≡ j) → Ar p R → Ar p R
if-eq (yes _) a = a
if-eq (no  _) _ = K 0#

-- `at d f`: f at the witness if there is one, zero otherwise
at : {X : P s → Set} → Dec (∃ X) → (P s → Ar p R) → Ar p R
at (yes (k , _)) f = f k
at (no  _)       _ = K 0#

-- sum of an s-indexed family of p-arrays, pointwise
Σ : (P s → Ar p R) → Ar p R
Σ f k = A.sum _+_ 0# (λ i → f i k)

------------------------------------------------------------------------
-- Evaluation

⟦_⟧ : E Γ is → Env Γ → Val is
⟦ var x ⟧                  ρ = lookup x ρ
⟦ zero ⟧                   ρ = K 0#
⟦ one ⟧                    ρ = K 1#
⟦ imaps e ⟧                ρ = λ i → scal (⟦ e ⟧ (ρ , i))
⟦ sels e i ⟧               ρ = K (⟦ e ⟧ ρ (⟦ i ⟧ ρ))
⟦ imap e ⟧                 ρ = unnest λ i → ⟦ e ⟧ (ρ , i)
⟦ sel e i ⟧                ρ = nest (⟦ e ⟧ ρ) (⟦ i ⟧ ρ)
⟦ imapb m e ⟧              ρ = unblock m (unnest λ i → ⟦ e ⟧ (ρ , i))
⟦ selb m e i ⟧             ρ = nest (block m (⟦ e ⟧ ρ)) (⟦ i ⟧ ρ)
⟦ sum e ⟧                  ρ = Σ λ i → ⟦ e ⟧ (ρ , i)
⟦ zero-but i j e ⟧         ρ = if-eq (⟦ i ⟧ ρ ≟ₚ ⟦ j ⟧ ρ) (⟦ e ⟧ ρ)
⟦ slide i sp e su ⟧        ρ = Sl.slide (⟦ i ⟧ ρ) sp (⟦ e ⟧ ρ) su
⟦ backslide i e su sp ⟧    ρ = Sl.backslide (⟦ i ⟧ ρ) (⟦ e ⟧ ρ) su 0# sp
⟦ un f e ⟧                 ρ = map (fn f) (⟦ e ⟧ ρ)
⟦ bin op e e₁ ⟧            ρ = zipWith (bop op) (⟦ e ⟧ ρ) (⟦ e₁ ⟧ ρ)
⟦ scaledown n e ⟧          ρ = map (scaledownʳ n) (⟦ e ⟧ ρ)
⟦ minus e ⟧                ρ = map -_ (⟦ e ⟧ ρ)
⟦ ix-const i ⟧             ρ = i
⟦ div m i ⟧                ρ = Ix.div m (⟦ i ⟧ ρ)
⟦ mod m i ⟧                ρ = Ix.mod m (⟦ i ⟧ ρ)
⟦ ix-plus i j su sp ⟧      ρ = (⟦ i ⟧ ρ ⊕ₚ ⟦ j ⟧ ρ) su sp
⟦ argmax w e ⟧             ρ = Am.argmax less w λ i → scal (⟦ e ⟧ (ρ , i))
⟦ ix-minus i j sp su e ⟧   ρ = at ((⟦ i ⟧ ρ ⊖ₚ ⟦ j ⟧ ρ) su sp) λ k → ⟦ e ⟧ (ρ , k)
⟦ ix-minusᵣ i j sp su e ⟧  ρ = at ((⟦ i ⟧ ρ ⊖ᵣₚ ⟦ j ⟧ ρ) su sp) λ k → ⟦ e ⟧ (ρ , k)
