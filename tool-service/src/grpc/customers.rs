//! `Customers`: typed customer reads for internal callers, running the same
//! tools as `chataigne_customers_list` and `chataigne_customer_get` through
//! the runner; this file holds the declaration and the conversions.
//!
//! | RPC (`chataigne.tools.v1.`) | kind | scope          | required fields |
//! |-----------------------------|------|----------------|-----------------|
//! | `Customers/ListCustomers`   | read | customers.read | organization_id |
//! | `Customers/GetCustomer`     | read | customers.read | customer_id     |

use chataigne_proto::tools::v1 as pb;

use super::activity_convert::order;
use super::convert::{non_empty, page};
use super::fields::typed_service;
use crate::domain::{self, DomainError};
use crate::tools::Answered;
use crate::tools::customer_get::{CustomerGetInput, CustomerGetOutput};
use crate::tools::customers_list::{CustomersListInput, CustomersListOutput};

typed_service! {
    /// The `Customers` service.
    CustomersService serves customers_server::Customers {
        list_customers: ListCustomersRequest => CustomersList
            -> ListCustomersResponse { organization_id };
        get_customer: GetCustomerRequest => CustomerGet -> GetCustomerResponse { customer_id };
    }
}

impl TryFrom<pb::ListCustomersRequest> for CustomersListInput {
    type Error = DomainError;
    fn try_from(request: pb::ListCustomersRequest) -> Result<Self, DomainError> {
        let (limit, cursor) = page(request.page);
        Ok(CustomersListInput {
            organization_id: request.organization_id,
            location_id: non_empty(request.location_id),
            name_query: non_empty(request.name_query),
            limit,
            cursor,
        })
    }
}

impl From<Answered<CustomersListOutput>> for pb::ListCustomersResponse {
    fn from(answer: Answered<CustomersListOutput>) -> Self {
        pb::ListCustomersResponse {
            customers: answer.data.customers.into_iter().map(customer).collect(),
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::GetCustomerRequest> for CustomerGetInput {
    type Error = DomainError;
    fn try_from(request: pb::GetCustomerRequest) -> Result<Self, DomainError> {
        Ok(CustomerGetInput {
            customer_id: request.customer_id,
        })
    }
}

impl From<Answered<CustomerGetOutput>> for pb::GetCustomerResponse {
    fn from(answer: Answered<CustomerGetOutput>) -> Self {
        pb::GetCustomerResponse {
            customer: Some(customer(answer.data.customer)),
            recent_orders: answer.data.recent_orders.into_iter().map(order).collect(),
        }
    }
}

fn customer(customer: domain::Customer) -> pb::Customer {
    pb::Customer {
        id: customer.id,
        name: customer.name,
        organization_id: customer.organization_id,
        organization_name: customer.organization_name,
        location_id: customer.location_id.unwrap_or_default(),
        email_masked: customer.email_masked.unwrap_or_default(),
        phone_masked: customer.phone_masked.unwrap_or_default(),
        order_count: customer.order_count,
        last_order_at: customer.last_order_at.unwrap_or_default(),
        created_at: customer.created_at,
    }
}
