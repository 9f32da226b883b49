// The app's user-assigned managed identity: every data-plane call the app makes (blob,
// queue, search, Key Vault, Application Insights) and the Functions host's own storage
// use it, so the app holds no keys and no connection strings.
param name string
param location string
param tags object

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output name string = identity.name
output principalId string = identity.properties.principalId
output clientId string = identity.properties.clientId
