//! `string_enum!`: the one definition of the enums that travel as fixed strings (`PetStatus`,
//! `OrderStatus`, `Plan`, `ErrorCode`, …): their list, spelling, serde form, `Display` and
//! `FromStr`.

/// Declares a fieldless enum with a wire spelling per variant. The enum derives `Debug`,
/// `Clone`, `Copy`, `PartialEq`, `Eq`, `Hash`, serde's `Serialize` and `Deserialize` (each
/// variant as its spelling) and, with the `openapi` feature, `utoipa::ToSchema`; it gets `ALL`
/// (every variant, in declaration order), `as_str`, `Display` (padded, so `{:<10}` lines up)
/// and `FromStr`, whose error names `field` and lists the accepted spellings.
///
/// `, default Variant` after the field gives it `Default`. Or `, with method: Type` there (its
/// doc comments before `method`), and `=> value` after each spelling, give it a `pub fn method`
/// answering each variant's value (as `ErrorCode`'s status); the two do not combine.
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
        $vis:vis enum $name:ident in $field:literal, with $(#[$method_meta:meta])* $method:ident: $ty:ty {
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
            $(#[$method_meta])*
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
    string_enum! {
        /// An enum of the test's own, with a spelling no variant's name gives.
        enum Sample in "sample", default Second {
            First = "first.one",
            Second = "second",
        }
    }

    string_enum! {
        /// With a value beside each spelling.
        enum Valued in "valued", with
            /// How heavy it is.
            weight: u16 {
            Light = "light" => 1,
            Heavy = "heavy" => 1000,
        }
    }

    #[test]
    fn a_variant_travels_as_its_spelling_and_parses_from_it() {
        for (value, text) in [(Sample::First, "first.one"), (Sample::Second, "second")] {
            let json = serde_json::to_value(value).expect("serialises");
            assert_eq!(json, serde_json::Value::from(text));
            assert_eq!(
                serde_json::from_value::<Sample>(json).expect("parses"),
                value
            );
            assert_eq!(text.parse::<Sample>(), Ok(value));
            assert_eq!(value.as_str(), text);
            assert_eq!(format!("{value:<10}|"), format!("{text:<10}|"));
        }
        let error = "First"
            .parse::<Sample>()
            .expect_err("a name is not a spelling");
        assert!(error.to_string().contains("first.one, second"), "{error}");
        assert!(serde_json::from_value::<Sample>("First".into()).is_err());
    }

    #[test]
    fn the_default_and_the_values_are_the_ones_declared() {
        assert_eq!(Sample::default(), Sample::Second);
        assert_eq!(Sample::ALL, [Sample::First, Sample::Second]);
        assert_eq!(Valued::Light.weight(), 1);
        assert_eq!(Valued::Heavy.weight(), 1000);
        assert_eq!(Valued::ALL.map(Valued::as_str), ["light", "heavy"]);
    }
}
