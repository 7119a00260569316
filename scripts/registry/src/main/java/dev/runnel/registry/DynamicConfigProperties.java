package dev.runnel.registry;

import java.util.List;

import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;

/**
 * The list of dynamically changeable configuration properties, which the build step of
 * apicurio-common-app-components-config-index-deployment (not on Maven Central) would
 * produce: empty, so every property keeps its configured value.
 */
public class DynamicConfigProperties {
    @Produces
    @Singleton
    DynamicConfigPropertyList properties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
