{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The paper's network on arrays (Spec.CNN.Array.forward) is what its
-- chain (Spec.Model.CNN.chain) computes: in every environment where
-- each binding holds the value of its expression (ValCons: the forward
-- run of the chain, or chain-env of Spec.Proofs.Chain.Build), the
-- binding r holds `forward` of the base values, at every position.
--
-- No law of the scalars is needed: the two sides compute the same sums
-- of the same products in the same order.  The proof goes building
-- block by building block (conv, mconv, avgp₂, then the pooling
-- layers), each stated for any expressions whose meanings are known
-- (`Means e ρ a`), and then binding by binding down the chain.  The one
-- fact about arrays it needs is that a sum of arrays is, at each
-- position, the sum of their elements there (Spec.Array.Properties.
-- sum-zipWith-K).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.CNN (𝕊 : Scalar) where

open import Data.Nat as ℕ using (ℕ)
open import Data.Product using (_,_)
open import Data.Unit using (tt)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base as A
  using (S; ι; _⊗_; P; Ar; map; nest; unnest; _+_≈_; suc_≈_)
import Spec.Array.Slide as Sl
open import Spec.Array.Index using (combine)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (↑_; ↑↑_)
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Ren 𝕊 using (eval-↑)
open import Spec.Proofs.Sum using (sum-cong)
open import Spec.Array.Properties using (sum-zipWith-K)
open import Spec.Proofs.Chain.Inline 𝕊 using (ValCons; base-env₀; run; run-values)
import Spec.CNN.Array 𝕊 as Arr
import Spec.Model.CNN as M

open Scalar 𝕊 using (R; 0#; _+_; _*_; fn) renaming (scaledown to scaledownʳ)

private
  variable
    Δ       : Ctx
    s p r u : S

------------------------------------------------------------------------
-- The building blocks

-- e means a in ρ, at every position
Means : E Δ (ar s) → Env Δ → Ar s R → Set
Means e ρ a = ∀ i → ⟦ e ⟧ ρ i ≡ a i

conv-means : (f : E Δ (ar r)) (sp : s + p ≈ r) (g : E Δ (ar s)) (su : suc p ≈ u)
             {ρ : Env Δ} {a : Ar r R} {w : Ar s R}
           → Means f ρ a → Means g ρ w → Means (M.conv f sp g su) ρ (Arr.conv sp a w su)
conv-means f sp g su {ρ} {a} {w} fa gw j =
  trans (sum-cong λ i → cong₂ _*_
          (trans (eval-↑ {ip = ix _} f ρ i _) (fa _))
          (trans (eval-↑ {ip = ix _} (↑ g) (ρ , i) j i) (trans (eval-↑ {ip = ix _} g ρ i i) (gw i))))
        (sym (sum-zipWith-K _+_ 0# (λ i → map (_* w i) (Sl.slide i sp a su)) j))

mconv-means : ∀ {w} (sp : s + p ≈ r) (inp : E Δ (ar r)) (we : E Δ (ar (u ⊗ s))) (b : E Δ (ar u))
              (su : suc p ≈ w) {ρ : Env Δ} {a : Ar r R} {wv : Ar (u ⊗ s) R} {bv : Ar u R}
            → Means inp ρ a → Means we ρ wv → Means b ρ bv
            → Means (M.mconv sp inp we b su) ρ (Arr.mconv sp a wv bv su)
mconv-means sp inp we b su {ρ} ia ww bb (i ⊗ j) =
  cong₂ _+_
    (conv-means (↑ inp) sp (sel (↑ we) (var v₀)) su
      (λ k → trans (eval-↑ {ip = ix _} inp ρ i k) (ia k))
      (λ k → trans (eval-↑ {ip = ix _} we ρ i (i ⊗ k)) (ww (i ⊗ k))) j)
    (trans (eval-↑ {ip = ix _} (↑ b) (ρ , i) j i) (trans (eval-↑ {ip = ix _} b ρ i i) (bb i)))

avgp₂-means : ∀ m n (a : E Δ (ar (ι (m ℕ.* 2) ⊗ ι (n ℕ.* 2))))
              {ρ : Env Δ} {av : Ar (ι (m ℕ.* 2) ⊗ ι (n ℕ.* 2)) R}
            → Means a ρ av → Means (M.avgp₂ m n a) ρ (Arr.avgp₂ m n av)
avgp₂-means m n a {ρ} aa i =
  cong (scaledownʳ 4) (sum-cong {s = ι 2 ⊗ ι 2} {_∙_ = _+_} {ε = 0#} λ j →
    trans (eval-↑ {ip = ix _} (↑ a) (ρ , i) j (combine (ι ⊗ ι) i j))
          (trans (eval-↑ {ip = ix _} a ρ i (combine (ι ⊗ ι) i j)) (aa (combine (ι ⊗ ι) i j))))

------------------------------------------------------------------------
-- The pooling layers

s1-means : (c : E Δ (ar M.C₁)) {ρ : Env Δ} {cv : Ar M.C₁ R}
         → Means c ρ cv → Means (M.s1-e c) ρ (unnest (map (Arr.avgp₂ 12 12) (nest cv)))
s1-means c {ρ} cc (i ⊗ j) =
  avgp₂-means 12 12 (sel (↑ c) (var v₀))
    (λ k → trans (eval-↑ {ip = ix _} c ρ i (i ⊗ k)) (cc (i ⊗ k))) j

s2-means : (c : E Δ (ar M.C₂)) {ρ : Env Δ} {cv : Ar M.C₂ R}
         → Means c ρ cv
         → Means (M.s2-e c) ρ (unnest (map (λ x → unnest (map (Arr.avgp₂ 4 4) (nest x))) (nest cv)))
s2-means c {ρ} cc (i ⊗ (j ⊗ k)) =
  avgp₂-means 4 4 (sel (sel (↑↑ c) (var v₁)) (var v₀))
    (λ l → trans (eval-↑ {ip = ix _} (↑ c) (ρ , i) j (i ⊗ (j ⊗ l)))
                 (trans (eval-↑ {ip = ix _} c ρ i (i ⊗ (j ⊗ l))) (cc (i ⊗ (j ⊗ l))))) k

------------------------------------------------------------------------
-- The network

pattern v₁₀ = var# 10 refl
pattern v₁₁ = var# 11 refl
pattern v₁₂ = var# 12 refl
pattern v₁₃ = var# 13 refl

-- The scope of the chain ends with d_r, r, d_loss, loss: r is v₂.  Its
-- base context is target inp k₁ b₁ k₂ b₂ fc b: inp is v₆, …, b is v₀.
cnn-forward : ∀ inp k₁ b₁ k₂ b₂ fc b (γ : Env M.Φ) → ValCons M.chain γ
            → let γ₀ = base-env₀ M.chain γ in
              (∀ i → lookup v₆ γ₀ i ≡ inp i) → (∀ i → lookup v₅ γ₀ i ≡ k₁ i)
            → (∀ i → lookup v₄ γ₀ i ≡ b₁ i) → (∀ i → lookup v₃ γ₀ i ≡ k₂ i)
            → (∀ i → lookup v₂ γ₀ i ≡ b₂ i) → (∀ i → lookup v₁ γ₀ i ≡ fc i)
            → (∀ i → lookup v₀ γ₀ i ≡ b i)
            → ∀ i → lookup v₂ γ i ≡ Arr.forward inp k₁ b₁ k₂ b₂ fc b i
cnn-forward inp k₁ b₁ k₂ b₂ fc b
  ((((((((((((((((((((((((((tt , t′) , inp′) , k₁′) , b₁′) , k₂′) , b₂′) , fc′) , b′)
     , d₁) , c11) , d₂) , c1) , d₃) , s1) , d₄) , c21) , d₅) , c2) , d₆) , s2) , d₇) , r1) , _) , r) , _) , _)
  (_ , r-eq , r1-eq , s2-eq , c2-eq , c21-eq , s1-eq , c1-eq , c11-eq , _)
  h-inp h-k₁ h-b₁ h-k₂ h-b₂ h-fc h-b = r≗
  where
    -- the environment in which each binding is evaluated
    ρ₀ = (((((((tt , t′) , inp′) , k₁′) , b₁′) , k₂′) , b₂′) , fc′) , b′
    ρ₂ = (((ρ₀ , d₁) , c11) , d₂) , c1            -- s1's
    ρ₃ = (ρ₂ , d₃) , s1                            -- c21's
    ρ₅ = (((ρ₃ , d₄) , c21) , d₅) , c2            -- s2's
    ρ₆ = (ρ₅ , d₆) , s2                            -- r1's
    L  = Arr.layers inp k₁ b₁ k₂ b₂ fc b

    c11≗ : ∀ i → c11 i ≡ Arr.mconv (ι ⊗ ι) inp k₁ b₁ (ι ⊗ ι) i
    c11≗ i = trans (c11-eq i)
      (mconv-means (ι ⊗ ι) (var v₆) (var v₅) (var v₄) (ι ⊗ ι) {ρ = ρ₀} h-inp h-k₁ h-b₁ i)
    c1≗ : ∀ i → c1 i ≡ Arr.Layers.c₁ L i
    c1≗ i = trans (c1-eq i) (cong (fn Fn.logistic) (c11≗ i))
    s1≗ : ∀ i → s1 i ≡ Arr.Layers.s₁ L i
    s1≗ i = trans (s1-eq i) (s1-means (var v₀) {ρ = ρ₂} c1≗ i)
    c21≗ : ∀ i → c21 i ≡ Arr.mconv (ι ⊗ (ι ⊗ ι)) (Arr.Layers.s₁ L) k₂ b₂ (ι ⊗ (ι ⊗ ι)) i
    c21≗ i = trans (c21-eq i)
      (mconv-means (ι ⊗ (ι ⊗ ι)) (var v₀) (var v₉) (var v₈) (ι ⊗ (ι ⊗ ι)) {ρ = ρ₃}
         s1≗ h-k₂ h-b₂ i)
    c2≗ : ∀ i → c2 i ≡ Arr.Layers.c₂ L i
    c2≗ i = trans (c2-eq i) (cong (fn Fn.logistic) (c21≗ i))
    s2≗ : ∀ i → s2 i ≡ Arr.Layers.s₂ L i
    s2≗ i = trans (s2-eq i) (s2-means (var v₀) {ρ = ρ₅} c2≗ i)
    r1≗ : ∀ i → r1 i ≡ Arr.mconv (ι ⊗ (ι ⊗ (ι ⊗ ι))) (Arr.Layers.s₂ L) fc b (ι ⊗ (ι ⊗ (ι ⊗ ι))) i
    r1≗ i = trans (r1-eq i)
      (mconv-means (ι ⊗ (ι ⊗ (ι ⊗ ι))) (var v₀) (var v₁₃) (var v₁₂) (ι ⊗ (ι ⊗ (ι ⊗ ι))) {ρ = ρ₆}
         s2≗ h-fc h-b i)
    r≗ : ∀ i → r i ≡ Arr.forward inp k₁ b₁ k₂ b₂ fc b i
    r≗ i = trans (r-eq i) (cong (fn Fn.logistic) (r1≗ i))

-- in particular in the chain's forward run from those base values.  (γ₀ is
-- a `let` in the type and in the proof alike, so that the two are the same
-- term: with a `where` the type checker would compare two runs of the
-- whole network by evaluating them.)
cnn-run : ∀ target inp k₁ b₁ k₂ b₂ fc b
        → let γ₀ = ((((((((tt , target) , inp) , k₁) , b₁) , k₂) , b₂) , fc) , b) in
          ∀ i → lookup v₂ (run M.chain γ₀) i ≡ Arr.forward inp k₁ b₁ k₂ b₂ fc b i
cnn-run target inp k₁ b₁ k₂ b₂ fc b =
  let γ₀ = ((((((((tt , target) , inp) , k₁) , b₁) , k₂) , b₂) , fc) , b) in
  cnn-forward inp k₁ b₁ k₂ b₂ fc b (run M.chain γ₀) (run-values M.chain γ₀)
    (λ _ → refl) (λ _ → refl) (λ _ → refl) (λ _ → refl) (λ _ → refl) (λ _ → refl) (λ _ → refl)
