//! `string_enum!`: the one definition of the enums that travel as fixed strings (`PetStatus`,
//! `OrderStatus`, `Plan`, `ErrorCode`, …): their list, spelling, serde form, `Display` and
//! `FromStr`.

/// Declares a fieldless enum with a wire spelling per variant. The enum derives `Debug`,
/// `Clone`, `Copy`, `PartialEq`, `Eq`, `Hash`, serde's `Serialize` and `Deserialize` (each
/// variant as its spelling) and, with the `openapi` feature, `utoipa::ToSchema`; it gets `ALL`
/// (every variant, in declaration order), `as_str`, `Display` (padded, so `{:<10}` lines up)
/// and `FromStr`, whose error names `field` and lists the accepted spellings.
///
/// `, default Variant` after the field gives it `Default`. `with method: Type` there, and
/// `=> value` after each spelling, give it `method`, each variant's value (as `ErrorCode`'s
/// status).
///
/// A spelling is taken as a `tt`, not a `literal`: a `literal` fragment reaches the derives
/// wrapped in an invisible group, which serde reads but utoipa does not (its schema would list
/// the variants' names instead of their spellings).
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident in $field:literal $(, default $default:ident)? {
            $( $(#[$variant_meta:meta])* $variant:ident = $text:tt, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        $vis enum $name {
            $( $(#[$variant_meta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$(Self::$variant),+];

            /// The wire (and storage) spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )+
                }
            }
        }

        $(
            impl Default for $name {
                fn default() -> Self {
                    Self::$default
                }
            }
        )?

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::ValidationError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .into_iter()
                    .find(|value| value.as_str() == s)
                    .ok_or_else(|| {
                        let names = Self::ALL.map(Self::as_str).join(", ");
                        $crate::ValidationError::invalid($field, format!("must be one of {names}"))
                    })
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident in $field:literal, with $method:ident: $ty:ty {
            $( $(#[$variant_meta:meta])* $variant:ident = $text:tt => $value:expr, )+
        }
    ) => {
        string_enum! {
            $(#[$meta])*
            $vis enum $name in $field {
                $( $(#[$variant_meta])* $variant = $text, )+
            }
        }

        impl $name {
            /// The variant's value, declared beside its spelling.
            pub fn $method(self) -> $ty {
                match self {
                    $( Self::$variant => $value, )+
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::webhook::{DeliveryState, EventType};
    use crate::{ErrorCode, KeyState, OrderStatus, PetStatus, Plan, Scope};

    /// Every variant of `E` travels in JSON as its spelling, and back; and parses from it.
    fn spelled_alike<E>(all: &[E], as_str: fn(E) -> &'static str)
    where
        E: Copy + std::fmt::Debug + PartialEq + serde::Serialize + serde::de::DeserializeOwned,
        E: std::str::FromStr,
        <E as std::str::FromStr>::Err: std::fmt::Debug,
    {
        for &value in all {
            let json = serde_json::to_value(value).expect("serialises");
            assert_eq!(json, serde_json::Value::from(as_str(value)), "{value:?}");
            let back: E = serde_json::from_value(json).expect("parses");
            assert_eq!(back, value);
            assert_eq!(as_str(value).parse::<E>().expect("parses"), value);
        }
    }

    #[test]
    fn each_enum_travels_as_its_spelling() {
        spelled_alike(&PetStatus::ALL, PetStatus::as_str);
        spelled_alike(&OrderStatus::ALL, OrderStatus::as_str);
        spelled_alike(&Plan::ALL, Plan::as_str);
        spelled_alike(&Scope::ALL, Scope::as_str);
        spelled_alike(&KeyState::ALL, KeyState::as_str);
        spelled_alike(&EventType::ALL, EventType::as_str);
        spelled_alike(&DeliveryState::ALL, DeliveryState::as_str);
        spelled_alike(&ErrorCode::ALL, ErrorCode::as_str);
        assert_eq!(
            serde_json::to_string(&EventType::PetCreated).expect("serialises"),
            r#""pet.created""#
        );
    }

    #[test]
    fn a_default_is_the_one_declared() {
        assert_eq!(PetStatus::default(), PetStatus::Available);
        assert_eq!(OrderStatus::default(), OrderStatus::Placed);
        assert_eq!(Scope::default(), Scope::ReadWrite);
    }

    #[test]
    fn a_value_declared_beside_a_spelling_is_its_variants() {
        assert_eq!(ErrorCode::InvalidJson.status(), 400);
        assert_eq!(ErrorCode::InsufficientScope.status(), 403);
        assert_eq!(ErrorCode::WebhookUrlRefused.status(), 422);
        assert_eq!(ErrorCode::StorageFull.status(), 503);
    }
}
