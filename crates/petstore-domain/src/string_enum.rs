//! `string_enum!`: the one definition of the enums that travel as fixed lowercase strings
//! (`PetStatus`, `OrderStatus`, `Plan`): their list, spelling, `Display` and `FromStr`.

/// Declares a fieldless enum with a wire spelling per variant, and gives it `ALL` (every
/// variant, in declaration order), `as_str`, `Display` (padded, so `{:<10}` lines up) and
/// `FromStr`, whose error names `field` and lists the accepted spellings.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident in $field:literal {
            $( $(#[$variant_meta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$variant_meta])* $variant, )+
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
}
