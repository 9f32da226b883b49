// Least-privilege role assignments. Built-in role ids are global constants; each is named
// in its comment. The app's identity gets data-plane roles only; the deploying principal
// (azd's AZURE_PRINCIPAL_ID) gets what the post-provision step needs and nothing else.
param identityPrincipalId string
@description('Object id of the deploying principal; empty: no deployer roles.')
param deployerPrincipalId string = ''
@allowed([
  'User'
  'ServicePrincipal'
])
param deployerPrincipalType string = 'User'
param storageAccountName string
param searchServiceName string
param keyVaultName string
param appInsightsName string

var roles = {
  // Storage Blob Data Owner. Not Contributor: the Functions host's identity-based
  // AzureWebJobsStorage and the blob trigger need it (Microsoft's table for the blob
  // trigger and host storage lists Owner), and Flex Consumption reads its deployment
  // package with this identity. Scoped to the one account.
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  // Storage Queue Data Contributor: send (service code), peek/receive/delete (queue
  // triggers), and the host's move to -poison. It includes everything Storage Queue Data
  // Message Processor (8a0f0c08-91a1-4084-bc3d-661d67233fed) and Message Sender
  // (c6a89b2d-59bc-44d0-9896-0f6e12d7b80a) grant, so those are not assigned as well.
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  // Storage Table Data Contributor: the Functions host writes its diagnostic events to
  // Table storage through AzureWebJobsStorage (event AZFD0003 when it cannot); the app's
  // own code uses no table.
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  // Search Index Data Contributor: upsert, delete and query documents (index worker, search route).
  searchIndexDataContributor: '8ebe5a00-799e-43f5-93ac-243d3dce84a7'
  // Search Service Contributor: create or update the index definition (post-provision step,
  // run as the deploying principal, not the app).
  searchServiceContributor: '7ca78c08-252a-4471-8644-bb5ff32d4ba0'
  // Key Vault Crypto Service Encryption User: wrapKey/unwrapKey of the snapshot key, and get.
  keyVaultCryptoServiceEncryptionUser: 'e147488a-f6f5-4113-8e2d-b22465e65bf6'
  // Key Vault Secrets User: read secrets not set as app settings (MEMNET_KEYVAULT_URL).
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6'
  // Monitoring Metrics Publisher: send telemetry to Application Insights with Entra auth.
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource search 'Microsoft.Search/searchServices@2023-11-01' existing = {
  name: searchServiceName
}

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: keyVaultName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource appBlob 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identityPrincipalId, roles.storageBlobDataOwner)
  scope: storage
  properties: {
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataOwner)
  }
}

resource appQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identityPrincipalId, roles.storageQueueDataContributor)
  scope: storage
  properties: {
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageQueueDataContributor)
  }
}

resource appTable 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identityPrincipalId, roles.storageTableDataContributor)
  scope: storage
  properties: {
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageTableDataContributor)
  }
}

resource appSearch 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(search.id, identityPrincipalId, roles.searchIndexDataContributor)
  scope: search
  properties: {
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.searchIndexDataContributor)
  }
}

resource appCrypto 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, identityPrincipalId, roles.keyVaultCryptoServiceEncryptionUser)
  scope: vault
  properties: {
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultCryptoServiceEncryptionUser)
  }
}

resource appSecrets 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, identityPrincipalId, roles.keyVaultSecretsUser)
  scope: vault
  properties: {
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsUser)
  }
}

resource appTelemetry 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, identityPrincipalId, roles.monitoringMetricsPublisher)
  scope: appInsights
  properties: {
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
  }
}

resource deployerSearch 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(deployerPrincipalId)) {
  name: guid(search.id, deployerPrincipalId, roles.searchServiceContributor)
  scope: search
  properties: {
    principalId: deployerPrincipalId
    principalType: deployerPrincipalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.searchServiceContributor)
  }
}
