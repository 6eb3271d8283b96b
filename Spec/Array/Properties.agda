{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Laws of the array combinators (Spec.Array.Base), all pointwise.
--
--  * map and zipWith: identity, composition, fusion, congruence, K;
--  * nest and unnest are inverse, and commute with map and zipWith;
--  * sum: congruence, fusion with a homomorphism (sum-map), and the
--    sum of an array of arrays taken pointwise (sum-zipWith-K): the
--    shape of `conv`, which adds up weighted slides with zipWith _+_.
--  * equality of shapes is decidable (_≟ₛ_).
-- Laws of sums that need a commutative monoid live in Spec.Proofs.Sum.
------------------------------------------------------------------------
module Spec.Array.Properties where

open import Data.Nat using (zero; suc)
import Data.Nat.Properties as ℕₚ
open import Relation.Nullary using (Dec; yes; no)
open import Data.Fin as F using (Fin)
open import Function using (_∘_; id)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base

private
  variable
    W X Y Z : Set
    s p : S

------------------------------------------------------------------------
-- Equality of shapes

infix 4 _≟ₛ_

_≟ₛ_ : (s t : S) → Dec (s ≡ t)
ι m ≟ₛ ι n with m ℕₚ.≟ n
... | yes refl = yes refl
... | no m≢n   = no λ { refl → m≢n refl }
(s ⊗ p) ≟ₛ (t ⊗ u) with s ≟ₛ t | p ≟ₛ u
... | yes refl | yes refl = yes refl
... | no s≢t   | _        = no λ { refl → s≢t refl }
... | yes _    | no p≢u   = no λ { refl → p≢u refl }
ι _ ≟ₛ (_ ⊗ _) = no λ ()
(_ ⊗ _) ≟ₛ ι _ = no λ ()

------------------------------------------------------------------------
-- map, zipWith, K

map-id : (a : Ar s X) → map id a ≗ a
map-id a i = refl

map-∘ : (f : Y → Z) (g : X → Y) (a : Ar s X) → map (f ∘ g) a ≗ map f (map g a)
map-∘ f g a i = refl

map-cong : {f g : X → Y} → (∀ x → f x ≡ g x) → {a b : Ar s X} → a ≗ b → map f a ≗ map g b
map-cong {g = g} fg ab i = trans (fg _) (cong g (ab i))

map-K : (f : X → Y) (x : X) → map {s = s} f (K x) ≗ K (f x)
map-K f x i = refl

zipWith-cong : (f : X → Y → Z) {a a′ : Ar s X} {b b′ : Ar s Y}
             → a ≗ a′ → b ≗ b′ → zipWith f a b ≗ zipWith f a′ b′
zipWith-cong f aa bb i = cong₂ f (aa i) (bb i)

zipWith-K : (f : X → Y → Z) (x : X) (y : Y) → zipWith {s = s} f (K x) (K y) ≗ K (f x y)
zipWith-K f x y i = refl

zipWith-Kˡ : (f : X → Y → Z) (x : X) (b : Ar s Y) → zipWith f (K x) b ≗ map (f x) b
zipWith-Kˡ f x b i = refl

map-zipWith : (g : Z → W) (f : X → Y → Z) (a : Ar s X) (b : Ar s Y)
            → map g (zipWith f a b) ≗ zipWith (λ x y → g (f x y)) a b
map-zipWith g f a b i = refl

zipWith-map : (f : X → Y → Z) (g : W → X) (a : Ar s W) (b : Ar s Y)
            → zipWith f (map g a) b ≗ zipWith (f ∘ g) a b
zipWith-map f g a b i = refl

zipWith-comm : (f : X → X → Y) → (∀ x y → f x y ≡ f y x)
             → (a b : Ar s X) → zipWith f a b ≗ zipWith f b a
zipWith-comm f comm a b i = comm (a i) (b i)

------------------------------------------------------------------------
-- nest and unnest

nest-unnest : (a : Ar s (Ar p X)) (i : P s) → nest (unnest a) i ≗ a i
nest-unnest a i j = refl

unnest-nest : (a : Ar (s ⊗ p) X) → unnest (nest a) ≗ a
unnest-nest a (i ⊗ j) = refl

nest-map : (f : X → Y) (a : Ar (s ⊗ p) X) (i : P s) → nest (map f a) i ≗ map f (nest a i)
nest-map f a i j = refl

unnest-map : (f : X → Y) (a : Ar s (Ar p X)) → unnest (map (map f) a) ≗ map f (unnest a)
unnest-map f a (i ⊗ j) = refl

unnest-zipWith : (f : X → Y → Z) (a : Ar s (Ar p X)) (b : Ar s (Ar p Y))
               → unnest (zipWith (zipWith f) a b) ≗ zipWith f (unnest a) (unnest b)
unnest-zipWith f a b (i ⊗ j) = refl

unnest-cong : {a b : Ar s (Ar p X)} → (∀ i → a i ≗ b i) → unnest a ≗ unnest b
unnest-cong e (i ⊗ j) = e i j

nest-cong : {a b : Ar (s ⊗ p) X} → a ≗ b → ∀ i → nest a i ≗ nest b i
nest-cong e i j = e (i ⊗ j)

------------------------------------------------------------------------
-- sum: congruence

sum₁-cong : ∀ {n} (_∙_ : X → X → X) (ε : X) {a b : Ar (ι n) X}
          → a ≗ b → sum₁ _∙_ ε a ≡ sum₁ _∙_ ε b
sum₁-cong {n = zero}  _∙_ ε e = refl
sum₁-cong {n = suc n} _∙_ ε e =
  cong₂ _∙_ (e (ι F.zero)) (sum₁-cong _∙_ ε λ { (ι i) → e (ι (F.suc i)) })

-- The head/tail view of a vector sum; `tail` is an ordinary function,
-- so tail (map f a) and map f (tail a) agree definitionally.
sucι : ∀ {n} → P (ι n) → P (ι (suc n))
sucι (ι i) = ι (F.suc i)

tail : ∀ {n} → Ar (ι (suc n)) X → Ar (ι n) X
tail a i = a (sucι i)

sum₁-suc : ∀ {n} (_∙_ : X → X → X) (ε : X) (a : Ar (ι (suc n)) X)
         → sum₁ _∙_ ε a ≡ a (ι F.zero) ∙ sum₁ _∙_ ε (tail a)
sum₁-suc {n = n} _∙_ ε a =
  cong (a (ι F.zero) ∙_) (sum₁-cong {n = n} _∙_ ε λ { (ι i) → refl })

sum-cong : (_∙_ : X → X → X) (ε : X) {a b : Ar s X} → a ≗ b → sum _∙_ ε a ≡ sum _∙_ ε b
sum-cong {s = ι n}   _∙_ ε e = sum₁-cong _∙_ ε e
sum-cong {s = s ⊗ p} _∙_ ε e =
  sum-cong {s = s} _∙_ ε λ i → sum-cong {s = p} _∙_ ε λ j → e (i ⊗ j)

------------------------------------------------------------------------
-- sum: fusion with a homomorphism

-- A map that preserves the unit and the operation commutes with sum
-- (e.g. scaledown n over +, with the Spec.Scalar.Laws assumptions).
sum-map : (_∙_ : X → X → X) (ε : X) (_∘′_ : Y → Y → Y) (ε′ : Y) (h : X → Y)
        → h ε ≡ ε′ → (∀ x y → h (x ∙ y) ≡ h x ∘′ h y)
        → (a : Ar s X) → h (sum _∙_ ε a) ≡ sum _∘′_ ε′ (map h a)
sum-map {s = ι zero}    _∙_ ε _∘′_ ε′ h hε h∙ a = hε
sum-map {s = ι (suc n)} _∙_ ε _∘′_ ε′ h hε h∙ a =
  begin
    h (sum₁ _∙_ ε a)                       ≡⟨ cong h (sum₁-suc _∙_ ε a) ⟩
    h (a₀ ∙ sum₁ _∙_ ε (tail a))           ≡⟨ h∙ _ _ ⟩
    h a₀ ∘′ h (sum₁ _∙_ ε (tail a))        ≡⟨ cong (h a₀ ∘′_) (sum-map {s = ι n} _ _ _ _ h hε h∙ (tail a)) ⟩
    h a₀ ∘′ sum₁ _∘′_ ε′ (tail (map h a))  ≡⟨ sym (sum₁-suc _∘′_ ε′ (map h a)) ⟩
    sum₁ _∘′_ ε′ (map h a)                 ∎
  where open ≡-Reasoning
        a₀ = a (ι F.zero)
sum-map {s = s ⊗ p} _∙_ ε _∘′_ ε′ h hε h∙ a =
  trans (sum-map {s = s} _∙_ ε _∘′_ ε′ h hε h∙ _)
        (sum-cong {s = s} _∘′_ ε′ λ i → sum-map {s = p} _∙_ ε _∘′_ ε′ h hε h∙ (nest a i))

------------------------------------------------------------------------
-- sum of an array of arrays

-- Adding up arrays with zipWith, starting from K ε, adds up each
-- position separately.
sum-zipWith-K : (_∙_ : X → X → X) (ε : X) (a : Ar s (Ar p X)) (j : P p)
              → sum (zipWith _∙_) (K ε) a j ≡ sum _∙_ ε (λ i → a i j)
sum-zipWith-K {s = ι zero}    _∙_ ε a j = refl
sum-zipWith-K {s = ι (suc n)} _∙_ ε a j =
  trans (cong-app (sum₁-suc (zipWith _∙_) (K ε) a) j)
        (trans (cong (a (ι F.zero) j ∙_) (sum-zipWith-K {s = ι n} _∙_ ε (tail a) j))
               (sym (sum₁-suc _∙_ ε (λ i → a i j))))
sum-zipWith-K {s = s ⊗ p} _∙_ ε a j =
  trans (sum-zipWith-K {s = s} _∙_ ε (λ i → sum (zipWith _∙_) (K ε) (nest a i)) j)
        (sum-cong {s = s} _∙_ ε λ i → sum-zipWith-K {s = p} _∙_ ε (nest a i) j)
