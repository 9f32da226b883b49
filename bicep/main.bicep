// mem.net on Azure: a Flex Consumption function app (Python 3.11) with a user-assigned
// managed identity; storage (blob container, queues), Azure AI Search, Key Vault with the
// snapshot key, Log Analytics + Application Insights, the spec 19.4 alerts, the Event Grid
// wiring of the snapshot blob trigger, and optional private networking.
// Deployed with `azd up` (azure.yaml); operations in docs/deploy.md. Not deployed from the
// machines this was written on: parsed with tree-sitter-bicep and structurally tested
// (tests/deploy).
targetScope = 'resourceGroup'

@minLength(1)
@maxLength(64)
@description('azd environment name: names and tags every resource.')
param environmentName string

@description('Region for every resource (Flex Consumption must be offered there).')
param location string = resourceGroup().location

@description('Object id of the deploying principal (azd sets AZURE_PRINCIPAL_ID): gets the role the post-provision index creation needs.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
])
param principalType string = 'User'

@description('Blob container of documents, events and snapshots (MEMNET_BLOB_CONTAINER).')
param blobContainerName string = 'memnet'

@allowed([
  'basic'
  'standard'
  'standard2'
  'standard3'
])
param searchSku string = 'basic'

@description('Azure AI Search index of events (MEMNET_SEARCH_INDEX).')
param searchIndexName string = 'memnet-events'

@description('Auth modes, comma separated (MEMNET_AUTH): entra, apikeys, appservice. appservice also turns on App Service Authentication and needs entraClientId.')
param authModes string = 'entra'

@description('Client id of the API\'s app registration (MEMNET_ENTRA_CLIENT_ID): App Service Authentication\'s Entra provider, with appservice auth only.')
param entraClientId string = ''

@description('Client id of the console\'s own single-page-app registration (MEMNET_CONSOLE_CLIENT_ID): set, the console at /console/ offers Entra ID sign-in; empty, API keys only.')
param consoleClientId string = ''

@minLength(1)
@description('Accepted token audiences, comma separated (MEMNET_ENTRA_AUDIENCES), e.g. api://memnet. Required: the app refuses to start without it under entra auth.')
param entraAudiences string

@description('Callers registry, relative to the deployed package root (MEMNET_CALLERS_FILE).')
param callersFile string = 'callers.json'

@description('Profiles directory, relative to the deployed package root (MEMNET_PROFILES_DIR).')
param profilesDir string = 'profiles'

@description('Requests per user per window; 0: no quota (MEMNET_QUOTA_USER_REQUESTS).')
param quotaUserRequests int = 0
param quotaUserWrites int = 0
param quotaServiceRequests int = 0
param quotaServiceWrites int = 0
@minValue(1)
@maxValue(3600)
param quotaWindowSeconds int = 60

@description('Retention sweep timer, NCRONTAB (MEMNET_SWEEP_SCHEDULE).')
param sweepSchedule string = '0 17 * * * *'

@description('Compaction timer, NCRONTAB (MEMNET_COMPACTION_SCHEDULE).')
param compactionSchedule string = '0 5 3 * * *'

@allowed([
  'rules'
  'openai'
  'azure-openai'
])
@description('Replay extractor (MEMNET_EXTRACTOR); openai and azure-openai need extraAppSettings.')
param extractor string = 'rules'

@description('More app settings, merged last (e.g. MEMNET_AZURE_OPENAI_ENDPOINT, MEMNET_AZURE_OPENAI_DEPLOYMENT).')
param extraAppSettings object = {}

@minValue(1)
@maxValue(1000)
param maximumInstanceCount int = 100

@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

@minValue(1)
@maxValue(1000)
@description('HTTP requests one instance serves at once; also the worker thread pool and the quota batch cap. Measured for a 2,048 MB (one core) instance: docs/performance.md, "Per-instance concurrency".')
param httpPerInstanceConcurrency int = 16

@minValue(0)
@maxValue(365)
@description('Days the storage account keeps a deleted blob recoverable (blob soft delete); 0 turns it off. A forgotten user\'s blobs stay recoverable by storage administrators this long, and forget receipts say until when: docs/forgetting.md, "What is left on disk".')
param blobSoftDeleteDays int = 7

@description('VNet integration and private endpoints for storage, search and Key Vault; public access off.')
param enablePrivateNetworking bool = false

@description('Email for alert notifications; empty: alerts without an action group.')
param alertEmail string = ''

@description('412 share per binding over 15 min that alerts (0..1, a string: Bicep has no float).')
param etagConflictRateThreshold string = '0.2'

@description('Fewest patches per binding in 15 min before the 412 share counts.')
param etagConflictMinPatches int = 50

@description('Validation failures in 5 min that alert.')
param validationFailureThreshold int = 50

@description('Replay backlog age in seconds that alerts.')
param replayBacklogAgeSeconds int = 300

@description('Index lag in seconds that alerts.')
param indexLagSeconds int = 120

var token = toLower(uniqueString(subscription().id, resourceGroup().id, environmentName))
var tags = {
  'azd-env-name': environmentName
  application: 'memnet'
}
var functionAppName = 'func-memnet-${token}'
var authModeList = map(split(authModes, ','), mode => trim(mode))
var audienceList = filter(map(split(entraAudiences, ','), audience => trim(audience)), audience => !empty(audience))

module identity 'modules/identity.bicep' = {
  name: 'identity'
  params: {
    name: 'id-memnet-${token}'
    location: location
    tags: tags
  }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: {
    workspaceName: 'log-memnet-${token}'
    appInsightsName: 'appi-memnet-${token}'
    location: location
    tags: tags
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  params: {
    name: 'stmemnet${token}'
    location: location
    tags: tags
    containerName: blobContainerName
    deploymentContainerName: 'app-package-${token}'
    workspaceId: monitoring.outputs.workspaceId
    enablePrivateNetworking: enablePrivateNetworking
    softDeleteDays: blobSoftDeleteDays
  }
}

module search 'modules/search.bicep' = {
  name: 'search'
  params: {
    name: 'srch-memnet-${token}'
    location: location
    tags: tags
    sku: searchSku
    workspaceId: monitoring.outputs.workspaceId
    enablePrivateNetworking: enablePrivateNetworking
  }
}

module keyVault 'modules/keyvault.bicep' = {
  name: 'keyvault'
  params: {
    name: 'kv-memnet-${token}'
    location: location
    tags: tags
    workspaceId: monitoring.outputs.workspaceId
    enablePrivateNetworking: enablePrivateNetworking
  }
}

module roles 'modules/roles.bicep' = {
  name: 'roles'
  params: {
    identityPrincipalId: identity.outputs.principalId
    deployerPrincipalId: principalId
    deployerPrincipalType: principalType
    storageAccountName: storage.outputs.name
    searchServiceName: search.outputs.name
    keyVaultName: keyVault.outputs.name
    appInsightsName: monitoring.outputs.appInsightsName
  }
}

module network 'modules/network.bicep' = if (enablePrivateNetworking) {
  name: 'network'
  params: {
    name: 'vnet-memnet-${token}'
    location: location
    tags: tags
  }
}

// Static, so that the loop below can be planned before anything is deployed (Bicep
// rejects a for-expression over module outputs); each target is picked in the body.
var privateEndpoints = [
  {
    groupId: 'blob'
    target: 'storage'
    dnsZoneName: 'privatelink.blob.${environment().suffixes.storage}'
  }
  {
    groupId: 'queue'
    target: 'storage'
    dnsZoneName: 'privatelink.queue.${environment().suffixes.storage}'
  }
  {
    groupId: 'searchService'
    target: 'search'
    dnsZoneName: 'privatelink.search.windows.net'
  }
  {
    groupId: 'vault'
    target: 'vault'
    dnsZoneName: 'privatelink.vaultcore.azure.net'
  }
]

module endpoints 'modules/private-endpoint.bicep' = [
  for endpoint in privateEndpoints: if (enablePrivateNetworking) {
    name: 'pe-${endpoint.groupId}'
    params: {
      name: 'pe-memnet-${endpoint.groupId}-${token}'
      location: location
      tags: tags
      subnetId: network.outputs.endpointSubnetId
      vnetId: network.outputs.id
      targetId: endpoint.target == 'storage' ? storage.outputs.id : (endpoint.target == 'search' ? search.outputs.id : keyVault.outputs.id)
      groupId: endpoint.groupId
      dnsZoneName: endpoint.dnsZoneName
    }
  }
]

// Every setting memnet/settings.py reads that the deployment decides (the rest keep their
// code defaults; tests/deploy/test_bicep.py lists them with a reason each).
var memnetSettings = {
  MEMNET_STORAGE: 'azure'
  MEMNET_BLOB_ACCOUNT_URL: storage.outputs.blobEndpoint
  MEMNET_BLOB_CONTAINER: blobContainerName
  MEMNET_BLOB_SOFT_DELETE_DAYS: string(blobSoftDeleteDays)
  MEMNET_SEARCH: 'azure'
  MEMNET_SEARCH_ENDPOINT: search.outputs.endpoint
  MEMNET_SEARCH_INDEX: searchIndexName
  MEMNET_KEYS: 'azure'
  MEMNET_KEYVAULT_KEY_ID: keyVault.outputs.keyUri
  MEMNET_KEYVAULT_URL: keyVault.outputs.vaultUri
  MEMNET_EXTRACTOR: extractor
  MEMNET_AUTH: authModes
  MEMNET_ENTRA_TENANT_ID: tenant().tenantId
  MEMNET_ENTRA_AUDIENCES: entraAudiences
  MEMNET_CONSOLE_CLIENT_ID: consoleClientId
  MEMNET_CALLERS_FILE: callersFile
  MEMNET_PROFILES_DIR: profilesDir
  MEMNET_QUOTA_USER_REQUESTS: string(quotaUserRequests)
  MEMNET_QUOTA_USER_WRITES: string(quotaUserWrites)
  MEMNET_QUOTA_SERVICE_REQUESTS: string(quotaServiceRequests)
  MEMNET_QUOTA_SERVICE_WRITES: string(quotaServiceWrites)
  MEMNET_QUOTA_WINDOW_SECONDS: string(quotaWindowSeconds)
  // A reservation takes at most the requests one instance serves at once, so tokens one
  // instance holds unspent never exceed its share of the load (docs/identity.md "Quotas").
  MEMNET_QUOTA_BATCH_MAX: string(httpPerInstanceConcurrency)
  MEMNET_SWEEP_SCHEDULE: sweepSchedule
  MEMNET_COMPACTION_SCHEDULE: compactionSchedule
  MEMNET_TELEMETRY: 'azure'
  APPLICATIONINSIGHTS_CONNECTION_STRING: monitoring.outputs.connectionString
  // Entra auth for telemetry (local auth is off on the component): the app's identity.
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identity.outputs.clientId};Authorization=AAD'
}

module functionApp 'modules/functionapp.bicep' = {
  name: 'functionapp'
  params: {
    name: functionAppName
    planName: 'plan-memnet-${token}'
    location: location
    tags: tags
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    blobEndpoint: storage.outputs.blobEndpoint
    queueEndpoint: storage.outputs.queueEndpoint
    deploymentContainerName: storage.outputs.deploymentContainerName
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    httpPerInstanceConcurrency: httpPerInstanceConcurrency
    appServiceAuth: contains(authModeList, 'appservice')
    entraClientId: entraClientId
    entraAudiences: audienceList
    workspaceId: monitoring.outputs.workspaceId
    subnetId: enablePrivateNetworking ? network.outputs.appSubnetId : ''
    memnetSettings: union(memnetSettings, extraAppSettings)
  }
  // The host starts with identity-based storage: its roles must exist first.
  dependsOn: [
    roles
  ]
}

module events 'modules/events.bicep' = {
  name: 'events'
  params: {
    name: 'evgt-memnet-${token}'
    location: location
    tags: tags
    storageAccountId: storage.outputs.id
  }
}

module alerts 'modules/alerts.bicep' = {
  name: 'alerts'
  params: {
    location: location
    tags: tags
    workspaceId: monitoring.outputs.workspaceId
    namePrefix: 'memnet-${token}'
    alertEmail: alertEmail
    etagConflictRateThreshold: etagConflictRateThreshold
    etagConflictMinPatches: etagConflictMinPatches
    validationFailureThreshold: validationFailureThreshold
    replayBacklogAgeSeconds: replayBacklogAgeSeconds
    indexLagSeconds: indexLagSeconds
  }
}

module dashboard 'modules/workbook.bicep' = {
  name: 'workbook'
  params: {
    location: location
    tags: tags
    workspaceId: monitoring.outputs.workspaceId
    seed: token
  }
}

// azd stores these in the environment (.azure/<env>/.env); hooks read them.
output AZURE_LOCATION string = location
output AZURE_SUBSCRIPTION_ID string = subscription().subscriptionId
output AZURE_RESOURCE_GROUP string = resourceGroup().name
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_FUNCTION_APP_NAME string = functionApp.outputs.name
output AZURE_FUNCTION_URL string = 'https://${functionApp.outputs.defaultHostName}'
output AZURE_STORAGE_ACCOUNT_NAME string = storage.outputs.name
// The postdeploy hook subscribes the snapshot blob trigger to this topic (scripts/azd_hooks.py).
output MEMNET_EVENTGRID_TOPIC string = events.outputs.name
output MEMNET_BLOB_CONTAINER string = storage.outputs.containerName
output MEMNET_SEARCH_ENDPOINT string = search.outputs.endpoint
output MEMNET_SEARCH_INDEX string = searchIndexName
output MEMNET_KEYVAULT_KEY_ID string = keyVault.outputs.keyUri
output MEMNET_IDENTITY_CLIENT_ID string = identity.outputs.clientId
