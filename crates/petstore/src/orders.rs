//! `petstore orders ...`: list every order, approve, deliver or cancel one.

use std::error::Error;
use std::io::Write;

use petstore_domain::{
    LifecycleError, Order, OrderAction, OrderError, OrderListQuery, PageRequest, Storage,
};
use serde_json::{Value, json};

use comfy_table::{Table, presets};

use crate::cli::{Format, OrdersCommand};
use crate::timestamp;

/// Runs an `orders` command against `storage`.
pub async fn orders(storage: &dyn Storage, command: OrdersCommand) -> Result<(), Box<dyn Error>> {
    let (id, action) = match command {
        OrdersCommand::List { format } => return list(storage, format).await,
        OrdersCommand::Approve { id } => (id, OrderAction::Approve),
        OrdersCommand::Deliver { id } => (id, OrderAction::Deliver),
        OrdersCommand::Cancel { id } => (id, OrderAction::Cancel),
    };
    match storage.change_order(id, None, action).await {
        Ok(order) => {
            eprintln!(
                "order {} is {} (pet {})",
                order.id, order.status, order.pet_id
            );
            Ok(())
        }
        Err(OrderError::Refused(LifecycleError::Transition { from, action })) => {
            Err(format!("order {id} is {from}: it cannot be {action}").into())
        }
        Err(error) => Err(error.into()),
    }
}

async fn list(storage: &dyn Storage, format: Format) -> Result<(), Box<dyn Error>> {
    let mut all: Vec<Order> = Vec::new();
    let mut page = PageRequest {
        limit: petstore_domain::Limit::new(petstore_domain::query::MAX_LIMIT)?,
        after: None,
    };
    loop {
        let found = storage
            .list_orders(&OrderListQuery { page, owner: None })
            .await?;
        all.extend(found.items);
        match found.next_after {
            Some(after) => page.after = Some(after),
            None => break,
        }
    }
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => {
            let listed: Vec<Value> = all
                .iter()
                .map(|order| {
                    let mut value = serde_json::to_value(order).unwrap_or(Value::Null);
                    value["ownerKeyId"] = json!(order.owner);
                    value
                })
                .collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&listed)?)?;
        }
        Format::Text => {
            let mut table = Table::new();
            table.load_preset(presets::NOTHING);
            table.set_header(vec!["ID", "PET", "STATUS", "KEY", "CREATED"]);
            for order in &all {
                table.add_row(vec![
                    order.id.to_string(),
                    order.pet_id.to_string(),
                    order.status.to_string(),
                    order.owner.map_or_else(|| "-".into(), |id| id.to_string()),
                    timestamp(Some(order.created_at)),
                ]);
            }
            writeln!(out, "{}", table.trim_fmt())?;
        }
    }
    Ok(())
}
